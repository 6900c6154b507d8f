package observe

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/internal/conditions"
	"fakelet.dev/fakelet/internal/headtail"
)

// Recorder collects the transitions of a fleet's nodes. Its methods are safe for concurrent use; the
// handlers it gives (NodeHandler, and the Lease watch of WatchLeases) are cheap enough for a watch of
// 100,000 nodes.
type Recorder struct {
	clock clock.PassiveClock

	mu sync.Mutex
	// The transitions themselves are kept only as samples, the first and the last maxKept: a run of
	// hours with flapping nodes records millions. What reports need of them is kept as it arrives:
	// their count, the Ready timeline, each node's taints, and what Notify's functions fold in.
	kept      headtail.Sample[Transition]
	pending   []Transition // added by the handler running now, for Notify's functions
	ready     *ReadyTimeline
	taints    map[string]map[[2]string]bool // node -> its taints (key, effect)
	strs      map[string]string             // interned names, types, statuses and reasons
	leases    map[string]time.Time          // node -> the spec.renewTime of its Lease's last renewal seen
	renewals  int64
	notify    []func(Transition)
	onRenewal func(node string, renewTime time.Time)
}

// NewRecorder returns an empty recorder that timestamps with clk (the real clock if nil).
func NewRecorder(clk clock.PassiveClock) *Recorder {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Recorder{clock: clk, kept: headtail.Sample[Transition]{Keep: maxKept}, strs: map[string]string{}, leases: map[string]time.Time{}, ready: newReadyTimeline(),
		taints: map[string]map[[2]string]bool{}}
}

// Notify adds f to be called with every transition as it is recorded, outside the recorder's lock,
// from the goroutine of the watch that saw it. f must be cheap. Call Notify before the watches run.
func (r *Recorder) Notify(f func(Transition)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notify = append(r.notify, f)
}

// OnRenewal sets f to be called with the spec.renewTime of every Lease renewal the Lease watch sees,
// outside the recorder's lock, from the watch's goroutine. f must be cheap. Call it before WatchLeases.
func (r *Recorder) OnRenewal(f func(node string, renewTime time.Time)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onRenewal = f
}

// maxKept is how many of the first and of the last transitions a Recorder keeps as samples.
const maxKept = 1000

// flush passes the transitions added since the last flush to every Notify function. r.mu must be
// held; it is released and taken again around the calls.
func (r *Recorder) flush() {
	if len(r.notify) == 0 || len(r.pending) == 0 {
		r.pending = r.pending[:0]
		return
	}
	added := slices.Clone(r.pending)
	r.pending = r.pending[:0]
	fs := r.notify
	r.mu.Unlock()
	defer r.mu.Lock()
	for _, t := range added {
		for _, f := range fs {
			f(t)
		}
	}
}

// NodeHandler returns a handler for fleet.Fleet.OnNode: it records every condition whose status
// changed and every taint added or removed (everything, when old is nil).
func (r *Recorder) NodeHandler() func(old, new *corev1.Node) {
	return r.ObserveNode
}

// ObserveNode records how n differs from old (nil when n was just seen for the first time).
func (r *Recorder) ObserveNode(old, n *corev1.Node) {
	at := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.flush()
	var oldConds []corev1.NodeCondition
	var oldTaints []corev1.Taint
	if old != nil {
		oldConds, oldTaints = old.Status.Conditions, old.Spec.Taints
	}
	for _, c := range n.Status.Conditions {
		if prev := conditions.Node(oldConds, c.Type); prev != nil && prev.Status == c.Status {
			continue
		}
		r.add(Transition{At: at, Node: n.Name, Kind: Condition, Type: string(c.Type), Status: string(c.Status), Reason: c.Reason})
	}
	for _, t := range n.Spec.Taints {
		if !hasTaint(oldTaints, t) {
			r.add(Transition{At: at, Node: n.Name, Kind: TaintAdded, Type: t.Key, Status: string(t.Effect)})
		}
	}
	for _, t := range oldTaints {
		if !hasTaint(n.Spec.Taints, t) {
			r.add(Transition{At: at, Node: n.Name, Kind: TaintRemoved, Type: t.Key, Status: string(t.Effect)})
		}
	}
}

// add records t with its strings interned, so that ten thousand "NodeStatusUnknown" share one (but
// not a Lease's uid, which no other transition has). r.mu must be held.
func (r *Recorder) add(t Transition) {
	t.Node, t.Type, t.Status = r.intern(t.Node), r.intern(t.Type), r.intern(t.Status)
	if t.Kind == LeaseCreated {
		t.Reason = string([]byte(t.Reason))
	} else {
		t.Reason = r.intern(t.Reason)
	}
	r.keep(t)
}

// keep counts t, keeps it if it is among the first or the last maxKept, and folds it into what is
// kept of all of them. r.mu must be held.
func (r *Recorder) keep(t Transition) {
	r.kept.Add(t)
	r.ready.add(t)
	switch t.Kind {
	case TaintAdded:
		if r.taints[t.Node] == nil {
			r.taints[t.Node] = map[[2]string]bool{}
		}
		r.taints[t.Node][[2]string{t.Type, t.Status}] = true
	case TaintRemoved:
		delete(r.taints[t.Node], [2]string{t.Type, t.Status})
	}
	r.pending = append(r.pending, t)
}

func (r *Recorder) intern(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := r.strs[s]; ok {
		return v
	}
	s = string([]byte(s)) // not a slice of a larger decoded buffer
	r.strs[s] = s
	return s
}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
}

// Transitions returns a copy of the transitions kept, in order of arrival: all of them while there
// are at most twice maxKept, else the first and the last maxKept (TransitionCount says how many there
// were).
func (r *Recorder) Transitions() []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kept.Items()
}

// TransitionCount is how many transitions the recorder saw.
func (r *Recorder) TransitionCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kept.Count()
}

// TaintedNodes counts the nodes that carry at least one taint now, as the transitions tell.
func (r *Recorder) TaintedNodes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, set := range r.taints {
		if len(set) > 0 {
			n++
		}
	}
	return n
}

// ReadyTimeline returns a copy of the nodes' Ready counts over time, as the transitions tell.
func (r *Recorder) ReadyTimeline() *ReadyTimeline {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready.copy()
}

// LeaseRenewals returns how many Lease renewals the recorder saw, over all nodes.
func (r *Recorder) LeaseRenewals() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renewals
}

// LastRenewTime returns the spec.renewTime of the last renewal of node's Lease the recorder saw; zero
// if none.
func (r *Recorder) LastRenewTime(node string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leases[node]
}
