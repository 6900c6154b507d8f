package profiles

import (
	"container/heap"
	"fmt"
	"iter"
	"time"

	"fakelet.dev/fakelet/heartbeat"
)

// Op is what happens to one node at one moment of a run. Most ops are an action's verb applied to one
// member of its group; flap becomes stop and start ops, churn becomes add and remove ops.
type Op string

const (
	OpStop  Op = "stop"
	OpStart Op = "start"
	// OpRestart stops the node's kubelet and starts a new one Args.Downtime later.
	OpRestart     Op = "restart"
	OpPartition   Op = "partition"
	OpHeal        Op = "heal"
	OpNotReady    Op = "notReady"
	OpReady       Op = "ready"
	OpCondition   Op = "condition"
	OpDeleteLease Op = "deleteLease"
	OpDenyAuth    Op = "denyAuth"
	OpRestoreAuth Op = "restoreAuth"
	OpLatency     Op = "latency"
	OpMode        Op = "mode"
	// OpAdd registers a new node, as a scale-up does (churn add).
	OpAdd Op = "add"
	// OpRemove deletes the node's Node and Lease and ends its agent, as a scale-down does (churn
	// remove). The schedule has no events for a node after its removal.
	OpRemove Op = "remove"
	// OpCrashPods, OpUnreadyPods and OpHealPods set the fault of Args.PodFault on the node's pods.
	OpCrashPods   Op = "crashPods"
	OpUnreadyPods Op = "unreadyPods"
	OpHealPods    Op = "healPods"
)

// Event is one op applied to one node at one moment, as an offset from the start of the run. The runner
// applies it when the fleet's clock reaches At and records when it took effect, keyed by Phase, Action
// and Node.
type Event struct {
	At   time.Duration
	Node int
	Op   Op
	// Phase and Action locate the action the event comes from in spec.phases.
	Phase, Action int
	// Args holds the op's parameters; nil for ops that take none. Events of one action share it.
	Args *Args
}

func (e Event) String() string {
	s := fmt.Sprintf("%v node %d %s", e.At, e.Node, e.Op)
	if e.Args != nil {
		s += " " + e.Args.String()
	}
	return s + fmt.Sprintf(" (phases[%d].actions[%d])", e.Phase, e.Action)
}

// Args are the parameters of an event's op; only the fields of its op are set.
type Args struct {
	// notReady: the Ready condition's reason and message.
	Reason, Message string
	// condition: which pressure condition, and its new status.
	Condition ConditionType
	Status    ConditionStatus
	// latency: how long each request waits before it is sent; 0 clears the delay.
	Delay time.Duration
	// mode: the heartbeat mode to switch to.
	Mode heartbeat.Mode
	// restart: how long the kubelet is gone.
	Downtime time.Duration
	restart  bool
	// crashPods, unreadyPods, healPods: what the node's pods do wrong; the zero PodFault heals.
	PodFault PodFault
	podFault bool
}

// PodFault is a pod-fault op's fault, as the fleet's SetPodFault takes it (agent.PodFault).
type PodFault struct {
	Crash    bool
	ExitCode int32
	Unready  bool
}

func (a *Args) String() string {
	switch {
	case a.Reason != "":
		return fmt.Sprintf("reason=%s message=%q", a.Reason, a.Message)
	case a.Condition != "":
		return fmt.Sprintf("%s=%s", a.Condition, a.Status)
	case a.Mode != "":
		return "mode=" + string(a.Mode)
	case a.restart:
		return "downtime=" + a.Downtime.String()
	case a.podFault:
		return fmt.Sprintf("crash=%v exitCode=%d unready=%v", a.PodFault.Crash, a.PodFault.ExitCode, a.PodFault.Unready)
	}
	return "delay=" + a.Delay.String()
}

// PhaseWindow is when a phase runs, as offsets from the start of the run: [Start, End).
type PhaseWindow struct {
	Name       string
	Start, End time.Duration
}

// Schedule is the timetable of a Plan: its phases and, computed on demand, the events of each. It holds
// no per-event state, so a run of 100,000 nodes flapping for an hour costs memory in proportion to the
// nodes, not to the events.
type Schedule struct {
	plan    *Plan
	windows []PhaseWindow
	// removedAt says when churn removes a node; the schedule drops later events of that node.
	removedAt map[int]time.Duration
}

// Schedule computes the phase windows and when churn removes each node.
func (plan *Plan) Schedule() *Schedule {
	s := &Schedule{plan: plan, removedAt: map[int]time.Duration{}}
	var start time.Duration
	for _, ph := range plan.Profile.Spec.Phases {
		end := start + ph.Duration.Duration
		s.windows = append(s.windows, PhaseWindow{Name: ph.Name, Start: start, End: end})
		start = end
	}
	for ref, cp := range plan.churn {
		a := &plan.Profile.Spec.Phases[ref.phase].Actions[ref.action]
		base := s.windows[ref.phase].Start + a.At.Duration
		for k, node := range cp.removes {
			s.removedAt[node] = base + churnStagger(a, k, len(cp.removes))
		}
	}
	return s
}

// Phases returns when each phase runs, in order.
func (s *Schedule) Phases() []PhaseWindow {
	return append([]PhaseWindow(nil), s.windows...)
}

// Duration is the length of the run.
func (s *Schedule) Duration() time.Duration {
	if len(s.windows) == 0 {
		return 0
	}
	return s.windows[len(s.windows)-1].End
}

// Events yields the events of one phase in order of time; events at the same time come in the order of
// their actions in the phase, then of node index. Each call computes them afresh, so a runner may
// iterate a phase when it starts and hold nothing else.
func (s *Schedule) Events(phase int) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		if phase < 0 || phase >= len(s.windows) {
			return
		}
		h := &orderedHeap[head]{less: headBefore}
		for _, st := range s.streams(phase) {
			if ev, ok := st.next(); ok {
				h.items = append(h.items, head{ev, st})
			}
		}
		heap.Init(h)
		for h.Len() > 0 {
			top := &h.items[0]
			ev := top.ev
			if next, ok := top.st.next(); ok {
				top.ev = next
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
			if at, gone := s.removedAt[ev.Node]; gone && ev.Op != OpRemove && ev.At >= at {
				continue
			}
			if !yield(ev) {
				return
			}
		}
	}
}

// All yields the events of every phase, in order of time.
func (s *Schedule) All() iter.Seq[Event] {
	return func(yield func(Event) bool) {
		for i := range s.windows {
			for ev := range s.Events(i) {
				if !yield(ev) {
					return
				}
			}
		}
	}
}

// streams returns one ordered stream of events per action of a phase (two for a churn that adds and
// removes).
func (s *Schedule) streams(phase int) []stream {
	ph := &s.plan.Profile.Spec.Phases[phase]
	start := s.windows[phase].Start
	var out []stream
	for j := range ph.Actions {
		a := &ph.Actions[j]
		base := start + a.At.Duration
		tmpl := Event{Phase: phase, Action: j, Op: Op(a.Do), Args: argsOf(a)}
		switch a.Do {
		case VerbFlap:
			out = append(out, newFlapStream(s.plan, a, tmpl, s.plan.Groups[a.Group], base, s.windows[phase].End))
		case VerbChurn:
			cp := s.plan.churn[actionRef{phase, j}]
			if len(cp.removes) > 0 {
				tmpl.Op = OpRemove
				out = append(out, &listStream{tmpl: tmpl, nodes: cp.removes, at: func(k, n int) time.Duration {
					return base + churnStagger(a, k, n)
				}})
			}
			if a.Add > 0 {
				tmpl.Op = OpAdd
				out = append(out, &rangeStream{tmpl: tmpl, first: cp.firstAdd, n: a.Add, at: func(k, n int) time.Duration {
					return base + churnStagger(a, k, n)
				}})
			}
		default:
			out = append(out, &listStream{tmpl: tmpl, nodes: s.plan.Groups[a.Group], at: func(k, n int) time.Duration {
				return base + stagger(a.Spread.Duration, k, n)
			}})
		}
	}
	return out
}

// argsOf returns the parameters an action's events carry, or nil.
func argsOf(a *Action) *Args {
	switch a.Do {
	case VerbNotReady:
		return &Args{Reason: a.Reason, Message: a.Message}
	case VerbCondition:
		return &Args{Condition: a.Type, Status: a.Status}
	case VerbLatency:
		return &Args{Delay: a.Delay.Duration}
	case VerbMode:
		return &Args{Mode: a.Mode}
	case VerbRestart:
		return &Args{Downtime: a.Downtime.Duration, restart: true}
	case VerbCrashPods:
		return &Args{PodFault: PodFault{Crash: true, ExitCode: *a.ExitCode}, podFault: true}
	case VerbUnreadyPods:
		return &Args{PodFault: PodFault{Unready: true}, podFault: true}
	case VerbHealPods:
		return &Args{podFault: true}
	}
	return nil
}

// stagger is the offset of the k-th of n members over a spread window: evenly spaced, the first at 0,
// the last one step before the window ends. Computed in two parts so that spread * k cannot overflow.
func stagger(spread time.Duration, k, n int) time.Duration {
	if n <= 1 || spread <= 0 {
		return 0
	}
	return spread/time.Duration(n)*time.Duration(k) + spread%time.Duration(n)*time.Duration(k)/time.Duration(n)
}

// churnStagger is the offset of the k-th of n nodes a churn action adds or removes: at its rate when it
// has one, else over its spread.
func churnStagger(a *Action, k, n int) time.Duration {
	if a.Rate != nil {
		return churnOffset(k, *a.Rate)
	}
	return stagger(a.Spread.Duration, k, n)
}

// head is a stream and its next event, in the heap that merges a phase's streams.
type head struct {
	ev Event
	st stream
}

// headBefore merges the streams of a phase by (At, Action, Node).
func headBefore(x, y *head) bool {
	a, b := x.ev, y.ev
	if a.At != b.At {
		return a.At < b.At
	}
	if a.Action != b.Action {
		return a.Action < b.Action
	}
	return a.Node < b.Node
}
