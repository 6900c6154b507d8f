package falsealarm

import (
	"errors"
	"math"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
)

// DefaultGrace is the node lifecycle controller's default --node-monitor-grace-period (v1.32 on).
const DefaultGrace = 50 * time.Second

// beatsKept is how many of its last requests a node keeps for attribution: a grace period holds five
// lease renewals at the kubelet's timing, with room for retries and status patches.
const beatsKept = 12

// pendingKept bounds a node's alarms waiting for attribution; beyond, the oldest is attributed at once.
const pendingKept = 8

// NodesListed is how many nodes a Count names, the first by name.
const NodesListed = 5

// restoring are the ops after which fakelet keeps the node healthy again, once a grace period has
// passed; every other op leaves the node the profile's until one of these (a latency op of 0s or a
// condition op back to its healthy status included: the detector does not read op parameters, and
// errs on the side of counting too few).
var restoring = map[string]bool{"start": true, "heal": true, "ready": true, "restoreAuth": true, "add": true}

// Count is the false alarms of one event on nodes of one group in one phase, by cause.
type Count struct {
	Phase string `json:"phase"`
	// Group is the group of the node's latest action, "" for nodes no op touched.
	Group string `json:"group"`
	// Event names the alarm as package reaction does: ready_unknown, taint_unreachable_noschedule_added,
	// pod_evicted, ...
	Event string `json:"event"`
	Count int    `json:"count"`
	// SendLag, ServerLatency, Rejection and None count them by cause (Attribute).
	SendLag       int `json:"sendLag"`
	ServerLatency int `json:"serverLatency"`
	Rejection     int `json:"rejection"`
	None          int `json:"none"`
	// Nodes are the first few nodes by name.
	Nodes []string `json:"nodes,omitempty"`
}

// Detector finds and attributes false alarms as requests, actions and transitions arrive. Its methods
// are safe for concurrent use; Request is on the heartbeat path and only takes a lock.
type Detector struct {
	grace time.Duration

	mu     sync.Mutex
	nodes  map[string]*node
	phases []reaction.Phase // starts in order; ends unused
	counts map[countKey]*Count
}

type countKey struct{ phase, group, event string }

type node struct {
	name      string
	beats     [beatsKept]keptBeat
	next, n   int       // ring: the slot to write next, and how many are filled
	firstSeen time.Time // the Node's first observation
	ready     bool      // seen Ready=True
	op        string
	opAt      time.Time
	group     string
	pending   []alarm
}

// keptBeat is a Beat as a node keeps it: a node keeps beatsKept of them for the whole run. Sent is in
// nanoseconds since the epoch (0: the zero time), the rest in microseconds from it or as durations,
// within the ±35 minutes an int32 holds (a wait longer than that counts as that long): a time.Time
// is three words where an int32 is half of one.
type keptBeat struct {
	sent              int64
	due, lag, latency micros // due: Due - Sent, if hasDue
	hasDue, rejected  bool
}

type micros int32

func toMicros(d time.Duration) micros {
	return micros(min(max(d.Microseconds(), math.MinInt32), math.MaxInt32))
}

func (m micros) duration() time.Duration { return time.Duration(m) * time.Microsecond }

func keep(b Beat) keptBeat {
	k := keptBeat{sent: nanos(b.Sent), lag: toMicros(b.Lag), latency: toMicros(b.Latency), rejected: b.Rejected}
	if !b.Due.IsZero() && !b.Sent.IsZero() {
		k.due, k.hasDue = toMicros(b.Due.Sub(b.Sent)), true
	}
	return k
}

func (k keptBeat) beat() Beat {
	b := Beat{Lag: k.lag.duration(), Sent: fromNanos(k.sent), Latency: k.latency.duration(), Rejected: k.rejected}
	if k.hasDue {
		b.Due = time.Unix(0, k.sent).Add(k.due.duration())
	}
	return b
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

type alarm struct {
	at           time.Time
	event, group string
}

// New returns a detector whose window is grace (0: DefaultGrace).
func New(grace time.Duration) *Detector {
	if grace <= 0 {
		grace = DefaultGrace
	}
	return &Detector{grace: grace, nodes: map[string]*node{}, counts: map[countKey]*Count{}}
}

func (d *Detector) node(name string) *node {
	n := d.nodes[name]
	if n == nil {
		n = &node{name: name}
		d.nodes[name] = n
	}
	return n
}

// Request implements agent.Recorder: it keeps the request among its node's last ones.
func (d *Detector) Request(req agent.Request) {
	if req.Node == "" {
		return
	}
	b := Beat{Due: req.Due, Lag: req.SendLag, Sent: req.Sent, Latency: req.Latency, Rejected: rejected(req.Err)}
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.node(req.Node)
	if n.n == beatsKept && len(n.pending) > 0 {
		// The oldest request is about to go: attribute the alarms whose window it may fall in first.
		old := n.beats[n.next].beat()
		end := old.Sent.Add(old.Latency)
		if lagEnd := old.Due.Add(old.Lag); lagEnd.After(end) {
			end = lagEnd
		}
		if end.After(n.pending[0].at.Add(-d.grace)) {
			d.attributeAll(n)
		}
	}
	n.beats[n.next] = keep(b)
	n.next = (n.next + 1) % beatsKept
	n.n = min(n.n+1, beatsKept)
}

// Heartbeat implements agent.Recorder.
func (d *Detector) Heartbeat(string, error) {}

// LeaseRenewed implements agent.Recorder.
func (d *Detector) LeaseRenewed(time.Duration) {}

// rejected says err is a 429 or a 5xx answer.
func rejected(err error) bool {
	if err == nil {
		return false
	}
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return false
	}
	code := s.Status().Code
	return code == http.StatusTooManyRequests || code >= 500
}

// PhaseBegan records that phase name began at: alarms from then on count in it.
func (d *Detector) PhaseBegan(name string, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.phases = append(d.phases, reaction.Phase{Name: name, Start: at})
}

// UsePhases replaces the phases recorded by PhaseBegan.
func (d *Detector) UsePhases(phases []reaction.Phase) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.phases = slices.Clone(phases)
}

// Applied records an op applied to a node: until a restoring op and a grace period after it, what
// the control plane does to the node is the profile's doing.
func (d *Detector) Applied(a reaction.Action) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.node(a.Node)
	n.op, n.opAt, n.group = a.Op, a.At, a.Group
}

// Observe takes one transition of the fleet's nodes, as observe records it.
func (d *Detector) Observe(t observe.Transition) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.node(t.Node)
	if t.Kind == observe.Condition && t.Type == "Ready" {
		// Every observation of a Node has its Ready condition: the first one's is its first
		// observation (its Lease may have been seen before it).
		if n.firstSeen.IsZero() {
			n.firstSeen = t.At
		}
		if t.Status == "True" {
			n.ready = true
			return
		}
	}
	ev := reaction.EventOf(t)
	if !Alarm(ev) || !n.ready || t.At.Equal(n.firstSeen) || d.profiles(n, t.At) {
		return // registration (the admission's not-ready taint), or what the profile asked for
	}
	n.pending = append(n.pending, alarm{at: t.At, event: ev, group: n.group})
	if len(n.pending) > pendingKept {
		d.attribute(n, n.pending[0])
		n.pending = n.pending[1:]
	}
}

// profiles says whether the node was the profile's at at: its latest op breaks it, or restored it
// less than a grace period before, or came after at.
func (d *Detector) profiles(n *node, at time.Time) bool {
	if n.op == "" {
		return false
	}
	return !restoring[n.op] || at.Sub(n.opAt) < d.grace
}

// Alarm says whether event is one the issue of false alarms counts: Ready turning Unknown or False,
// a not-ready or unreachable taint added, a pod evicted.
func Alarm(event string) bool {
	switch event {
	case reaction.ReadyUnknown, reaction.ReadyFalse, reaction.PodEvicted,
		reaction.TaintEvent("node.kubernetes.io/not-ready", "NoSchedule", true),
		reaction.TaintEvent("node.kubernetes.io/not-ready", "NoExecute", true),
		reaction.TaintEvent("node.kubernetes.io/unreachable", "NoSchedule", true),
		reaction.TaintEvent("node.kubernetes.io/unreachable", "NoExecute", true):
		return true
	}
	return false
}

func (d *Detector) attributeAll(n *node) {
	for _, a := range n.pending {
		d.attribute(n, a)
	}
	n.pending = n.pending[:0]
}

// attribute counts a with the cause the node's kept requests show.
func (d *Detector) attribute(n *node, a alarm) {
	beats := make([]Beat, 0, n.n)
	for i := range n.n {
		beats = append(beats, n.beats[(n.next-n.n+i+beatsKept)%beatsKept].beat())
	}
	at := Attribute(beats, a.at, d.grace)
	k := countKey{d.phaseAt(a.at), a.group, a.event}
	c := d.counts[k]
	if c == nil {
		c = &Count{Phase: k.phase, Group: k.group, Event: k.event}
		d.counts[k] = c
	}
	c.Count++
	switch at.Cause {
	case CauseSendLag:
		c.SendLag++
	case CauseServerLatency:
		c.ServerLatency++
	case CauseRejection:
		c.Rejection++
	default:
		c.None++
	}
	if i, found := slices.BinarySearch(c.Nodes, n.name); !found && i < NodesListed {
		c.Nodes = slices.Insert(c.Nodes, i, n.name)
		c.Nodes = c.Nodes[:min(len(c.Nodes), NodesListed)]
	}
}

// phaseAt names the phase running at t: the last one that began by then (the first if none had).
func (d *Detector) phaseAt(t time.Time) string {
	name := ""
	for i, p := range d.phases {
		if i == 0 || !p.Start.After(t) {
			name = p.Name
		}
	}
	return name
}

// Counts attributes the alarms still waiting (with the requests seen so far: one unanswered now is
// not seen) and returns every count, in the order of phases, then by group and event.
func (d *Detector) Counts() []Count {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range d.nodes {
		d.attributeAll(n)
	}
	order := map[string]int{}
	for i, p := range d.phases {
		order[p.Name] = i
	}
	out := make([]Count, 0, len(d.counts))
	for _, c := range d.counts {
		cp := *c
		cp.Nodes = slices.Clone(c.Nodes)
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Phase != b.Phase {
			return order[a.Phase] < order[b.Phase]
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Event < b.Event
	})
	return out
}
