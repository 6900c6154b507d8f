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
