package observe

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Recorder collects the transitions of a fleet's nodes. Its methods are safe for concurrent use; the
// handlers it gives (NodeHandler, and the Lease watch of WatchLeases) are cheap enough for a watch of
// 100,000 nodes.
type Recorder struct {
	now func() time.Time

	mu          sync.Mutex
	transitions []Transition
	strs        map[string]string // interned names, types, statuses and reasons
	leases      map[string]*leaseState
	renewals    int64
	notify      []func(Transition)
	onRenewal   func(node string, renewTime time.Time)
}

// leaseState is what the recorder keeps of one node's Lease.
type leaseState struct {
	renewals    int64
	lastRenewal time.Time // when the last renewal arrived
}

// NewRecorder returns an empty recorder that timestamps with now (time.Now if nil).
func NewRecorder(now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{now: now, strs: map[string]string{}, leases: map[string]*leaseState{}}
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

// notifyFrom passes the transitions recorded since the n-th to every Notify function. r.mu must be
// held; it is released and taken again around the calls.
func (r *Recorder) notifyFrom(n int) {
	if len(r.notify) == 0 || n >= len(r.transitions) {
		return
	}
	added := slices.Clone(r.transitions[n:])
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
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notifyFrom(len(r.transitions))
	var oldConds []corev1.NodeCondition
	var oldTaints []corev1.Taint
	if old != nil {
		oldConds, oldTaints = old.Status.Conditions, old.Spec.Taints
	}
	for _, c := range n.Status.Conditions {
		if prev := findCondition(oldConds, c.Type); prev != nil && prev.Status == c.Status {
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

// add appends t with its strings interned, so that ten thousand "NodeStatusUnknown" share one.
// r.mu must be held.
func (r *Recorder) add(t Transition) {
	t.Node, t.Type, t.Status, t.Reason = r.intern(t.Node), r.intern(t.Type), r.intern(t.Status), r.intern(t.Reason)
	r.transitions = append(r.transitions, t)
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

func findCondition(conds []corev1.NodeCondition, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
}

// Transitions returns a copy of everything recorded so far, in order of arrival.
func (r *Recorder) Transitions() []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.transitions)
}

// LeaseRenewals returns how many Lease renewals the recorder saw, over all nodes.
func (r *Recorder) LeaseRenewals() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.renewals
}

// LastRenewalSeen returns when the recorder last saw node's Lease renewed, and how many renewals of it
// it saw; zero if none.
func (r *Recorder) LastRenewalSeen(node string) (at time.Time, renewals int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.leases[node]; l != nil {
		return l.lastRenewal, l.renewals
	}
	return time.Time{}, 0
}
