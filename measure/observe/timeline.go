package observe

import (
	"sort"
	"time"
)

// StateCount is how many nodes were in each Ready state at one moment.
type StateCount struct {
	At time.Time `json:"at"`
	// Ready, NotReady and Unknown count nodes whose Ready condition is True, False and Unknown.
	Ready    int `json:"ready"`
	NotReady int `json:"notReady"`
	Unknown  int `json:"unknown"`
}

// Timeline replays the Ready transitions and returns the node state counts at start, every step after
// it and at end. Transitions need not be sorted.
func Timeline(ts []Transition, start, end time.Time, step time.Duration) []StateCount {
	if step <= 0 || end.Before(start) {
		return nil
	}
	ready := make([]Transition, 0, len(ts))
	for _, t := range ts {
		if t.Kind == Condition && t.Type == "Ready" {
			ready = append(ready, t)
		}
	}
	sort.SliceStable(ready, func(i, j int) bool { return ready[i].At.Before(ready[j].At) })
	state := map[string]string{}
	counts := map[string]int{}
	var out []StateCount
	next := 0
	sample := func(at time.Time) {
		for next < len(ready) && !ready[next].At.After(at) {
			t := ready[next]
			if prev, ok := state[t.Node]; ok {
				counts[prev]--
			}
			state[t.Node] = t.Status
			counts[t.Status]++
			next++
		}
		out = append(out, StateCount{At: at, Ready: counts["True"], NotReady: counts["False"], Unknown: counts["Unknown"]})
	}
	for at := start; at.Before(end); at = at.Add(step) {
		sample(at)
	}
	sample(end)
	return out
}

// Tainted counts the nodes that carry at least one taint at the end of the transitions (in order of
// arrival, as a Recorder returns them).
func Tainted(ts []Transition) int {
	taints := map[string]map[[2]string]bool{}
	for _, t := range ts {
		switch t.Kind {
		case TaintAdded:
			if taints[t.Node] == nil {
				taints[t.Node] = map[[2]string]bool{}
			}
			taints[t.Node][[2]string{t.Type, t.Status}] = true
		case TaintRemoved:
			delete(taints[t.Node], [2]string{t.Type, t.Status})
		}
	}
	n := 0
	for _, set := range taints {
		if len(set) > 0 {
			n++
		}
	}
	return n
}
