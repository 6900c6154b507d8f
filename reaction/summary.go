package reaction

import (
	"slices"
	"sort"
)

// MissingListed is how many of the nodes that never reacted a Summary names.
const MissingListed = 5

// Summary is one reaction to the actions of one op on one group in one phase.
type Summary struct {
	Phase string `json:"phase"`
	Group string `json:"group"`
	Op    string `json:"op"`
	Event string `json:"event"`
	// Actions is how many times the op was applied to nodes of the group in the phase.
	Actions int `json:"actions"`
	// Reacted is how many of those actions the event followed; Missing how many it should have
	// followed and did not within the phase, MissingNodes the first few of those nodes.
	Reacted      int      `json:"reacted"`
	Missing      int      `json:"missing"`
	MissingNodes []string `json:"missingNodes,omitempty"`
	// FromAction is the latency from the action; FromLastRenewal from the node's last heartbeat before
	// it, only for ops that silence the node (stop, partition, denyAuth).
	FromAction      Stats  `json:"fromAction"`
	FromLastRenewal *Stats `json:"fromLastRenewal,omitempty"`
	// Samples are the latencies themselves, in seconds, in order of the actions: from the last renewal
	// where measured, else from the action. Charts draw their distribution.
	Samples []float64 `json:"samples,omitempty"`
}

// SummarizeResults groups results by phase, group, op and event, in the order of phases (then group, op,
// and the events by their median latency, so that they read in the order they happened).
func SummarizeResults(results []Result, phases []Phase) []Summary {
	type key struct{ phase, group, op, event string }
	type acc struct {
		fromAction, fromRenewal []float64
		missing                 []string
	}
	actions := map[[3]string]int{}
	accs := map[key]*acc{}
	get := func(k key) *acc {
		if accs[k] == nil {
			accs[k] = &acc{}
		}
		return accs[k]
	}
	for _, r := range results {
		actions[[3]string{r.Phase, r.Group, r.Op}]++
		for _, re := range r.Reactions {
			a := get(key{r.Phase, r.Group, r.Op, re.Event})
			a.fromAction = append(a.fromAction, re.At.Sub(r.At).Seconds())
			if last := r.LastHeartbeat(); silencing[r.Op] && !last.IsZero() {
				a.fromRenewal = append(a.fromRenewal, re.At.Sub(last).Seconds())
			}
		}
		for _, ev := range r.Missing {
			a := get(key{r.Phase, r.Group, r.Op, ev})
			a.missing = append(a.missing, r.Node)
		}
	}
	var out []Summary
	for k, a := range accs {
		s := Summary{
			Phase: k.phase, Group: k.group, Op: k.op, Event: k.event,
			Actions: actions[[3]string{k.phase, k.group, k.op}],
			Reacted: len(a.fromAction), Missing: len(a.missing),
			FromAction: Summarize(a.fromAction),
			Samples:    a.fromAction,
		}
		if len(a.fromRenewal) > 0 {
			st := Summarize(a.fromRenewal)
			s.FromLastRenewal, s.Samples = &st, a.fromRenewal
		}
		slices.Sort(a.missing)
		s.MissingNodes = a.missing[:min(len(a.missing), MissingListed)]
		out = append(out, s)
	}
	phaseIndex := map[string]int{}
	for i, p := range phases {
		phaseIndex[p.Name] = i
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Phase != b.Phase {
			pa, oka := phaseIndex[a.Phase]
			pb, okb := phaseIndex[b.Phase]
			if oka != okb {
				return oka
			}
			if pa != pb {
				return pa < pb
			}
			return a.Phase < b.Phase
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		if (a.Reacted == 0) != (b.Reacted == 0) {
			return a.Reacted > 0
		}
		if a.FromAction.P50 != b.FromAction.P50 {
			return a.FromAction.P50 < b.FromAction.P50
		}
		return a.Event < b.Event
	})
	return out
}
