package reaction

import (
	"sort"
	"time"

	"fakelet.dev/fakelet/measure/observe"
)

// Result is what followed one action on one node, up to the end of the action's phase or the next
// action on the same node, whichever came first.
type Result struct {
	Action
	// Reactions are the first transition of each event in the window, in order of time.
	Reactions []Reaction `json:"reactions,omitempty"`
	// Missing are the events the action should have caused that did not come in the window.
	Missing []string `json:"missing,omitempty"`
}

// Reaction is one reaction and when it arrived.
type Reaction struct {
	Event string    `json:"event"`
	At    time.Time `json:"at"`
}

// Extract pairs every action with the reactions that followed it. Transitions need not be sorted.
// An action whose phase is not among phases has no end but the node's next action.
func Extract(actions []Action, phases []Phase, ts []observe.Transition) []Result {
	byNode := map[string][]observe.Transition{}
	for _, t := range ts {
		byNode[t.Node] = append(byNode[t.Node], t)
	}
	for _, list := range byNode {
		sort.SliceStable(list, func(i, j int) bool { return list[i].At.Before(list[j].At) })
	}
	ends := map[string]time.Time{}
	for _, p := range phases {
		ends[p.Name] = p.End
	}
	// The next action on the same node ends a window: sort each node's actions by time.
	order := make([]int, len(actions))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := actions[order[i]], actions[order[j]]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return a.At.Before(b.At)
	})
	next := make([]time.Time, len(actions)) // zero: none
	for k := range order {
		a := actions[order[k]]
		for m := k + 1; m < len(order) && actions[order[m]].Node == a.Node; m++ {
			if b := actions[order[m]]; b.At.After(a.At) {
				next[order[k]] = b.At
				break
			}
		}
	}
	out := make([]Result, len(actions))
	for i, a := range actions {
		end := ends[a.Phase]
		if n := next[i]; !n.IsZero() && (end.IsZero() || n.Before(end)) {
			end = n
		}
		out[i] = follow(a, end, byNode[a.Node])
	}
	return out
}

// follow finds the reactions to a among the node's sorted transitions, up to end (zero: no end).
func follow(a Action, end time.Time, ts []observe.Transition) Result {
	r := Result{Action: a}
	var st nodeState
	i := 0
	for ; i < len(ts) && !ts[i].At.After(a.At); i++ {
		st.apply(ts[i])
	}
	seen := map[string]bool{}
	for ; i < len(ts) && (end.IsZero() || ts[i].At.Before(end)); i++ {
		ev := EventOf(ts[i])
		if ev == "" || seen[ev] {
			continue
		}
		seen[ev] = true
		r.Reactions = append(r.Reactions, Reaction{Event: ev, At: ts[i].At})
	}
	for _, ev := range st.expected(a) {
		if !seen[ev] {
			r.Missing = append(r.Missing, ev)
		}
	}
	return r
}

// nodeState is a node's conditions, taints and pods as replayed from its transitions.
// nodeState is kept for every node of the run: its conditions are a few, in a slice, and its maps
// are made on their first write (a node of the heartbeat footprint has no pod).
type nodeState struct {
	conditions []condition
	taints     map[[2]string]bool // key, effect
	pods       map[string]bool    // name -> Ready, for the pods not deleted
}

type condition struct{ typ, status string }

// condition returns the status of the node's condition typ, "" if it has none.
func (s *nodeState) condition(typ string) string {
	for _, c := range s.conditions {
		if c.typ == typ {
			return c.status
		}
	}
	return ""
}

func (s *nodeState) setCondition(typ, status string) {
	for i := range s.conditions {
		if s.conditions[i].typ == typ {
			s.conditions[i].status = status
			return
		}
	}
	if s.conditions == nil {
		s.conditions = make([]condition, 0, 5) // a kubelet's five
	}
	s.conditions = append(s.conditions, condition{typ, status})
}

// podsReady counts the node's pods that are Ready and those that are not.
func (s *nodeState) podsReady() (ready, notReady int) {
	for _, r := range s.pods {
		if r {
			ready++
		} else {
			notReady++
		}
	}
	return ready, notReady
}

func (s *nodeState) apply(t observe.Transition) {
	switch t.Kind {
	case observe.Condition:
		s.setCondition(t.Type, t.Status)
	case observe.TaintAdded:
		if s.taints == nil {
			s.taints = map[[2]string]bool{}
		}
		s.taints[[2]string{t.Type, t.Status}] = true
	case observe.TaintRemoved:
		delete(s.taints, [2]string{t.Type, t.Status})
		if len(s.taints) == 0 {
			s.taints = nil // most nodes carry a taint only while they start or are down
		}
	case observe.PodReady, observe.PodNotReady:
		if s.pods == nil {
			s.pods = map[string]bool{}
		}
		s.pods[t.Type] = t.Kind == observe.PodReady
	case observe.PodDeleted:
		delete(s.pods, t.Type)
	}
}

// pressureTaints are the taints the node lifecycle controller sets for each pressure condition.
var pressureTaints = map[string]string{
	"MemoryPressure": taintPrefix + "memory-pressure",
	"DiskPressure":   taintPrefix + "disk-pressure",
	"PIDPressure":    taintPrefix + "pid-pressure",
}

// expected returns the events a should cause on a node in state s: the node lifecycle controller's
// answer to a silent, not ready, pressured or recovered node, leaving out what the node already shows.
// Of pods: a silenced node's Ready pods are marked not Ready, and a recovered node's agent reports
// its pods Ready again. Evictions are never expected: whether one comes within the phase depends on
// the pods' toleration and the controller's rate limits.
func (s *nodeState) expected(a Action) []string {
	var out []string
	breaks := func(ready, taint string) {
		if s.condition("Ready") != ready {
			out = append(out, ConditionEvent("Ready", ready))
		}
		for _, effect := range []string{noSchedule, noExecute} {
			if !s.taints[[2]string{taint, effect}] {
				out = append(out, TaintEvent(taint, effect, true))
			}
		}
	}
	switch a.Op {
	case "stop", "partition", "denyAuth":
		breaks("Unknown", unreachable)
		if ready, _ := s.podsReady(); ready > 0 {
			out = append(out, PodNotReady)
		}
	case "notReady":
		breaks("False", notReady)
	case "start", "heal", "restoreAuth", "ready", "add":
		if s.condition("Ready") != "True" {
			out = append(out, ReadyTrue)
		}
		for _, key := range []string{unreachable, notReady} {
			for _, effect := range []string{noSchedule, noExecute} {
				if s.taints[[2]string{key, effect}] {
					out = append(out, TaintEvent(key, effect, false))
				}
			}
		}
		if _, notReady := s.podsReady(); notReady > 0 {
			out = append(out, PodReady)
		}
	case "condition":
		if a.Condition == "" || s.condition(a.Condition) == a.Status {
			break
		}
		out = append(out, ConditionEvent(a.Condition, a.Status))
		if taint := pressureTaints[a.Condition]; taint != "" {
			has := s.taints[[2]string{taint, noSchedule}]
			if a.Status == "True" && !has || a.Status == "False" && has {
				out = append(out, TaintEvent(taint, noSchedule, a.Status == "True"))
			}
		}
	case "deleteLease":
		out = append(out, LeaseRecreated)
	}
	return out
}
