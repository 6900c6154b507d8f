package reaction

import (
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
)

// MaxSamples bounds the latencies a Summary keeps of one reaction: a run of hours with nodes flapping
// every second reacts millions of times. Up to this many are kept exactly; beyond, a uniform sample
// of this many (reservoir sampling), from which the percentiles are taken; Count, Min and Max stay
// exact, and Summary.SamplesOf says how many there were.
const MaxSamples = 10_000

// Accumulator folds Results into Summaries as they are closed, in memory bounded by the number of
// (phase, group, op, event) keys, not by the number of actions.
type Accumulator struct {
	actions map[[3]string]int
	accs    map[summaryKey]*summaryAcc
	rng     *rand.Rand
}

type summaryKey struct{ phase, group, op, event string }

type summaryAcc struct {
	fromAction, fromRenewal sampler
	missing                 int
	missingNodes            []string // the MissingListed first by name
}

// sampler keeps up to MaxSamples latencies, a uniform sample beyond, and the exact count, min and max.
type sampler struct {
	kept     []float64
	n        int
	min, max float64
}

func (s *sampler) add(x float64, rng *rand.Rand) {
	if s.n == 0 || x < s.min {
		s.min = x
	}
	if s.n == 0 || x > s.max {
		s.max = x
	}
	s.n++
	if len(s.kept) < MaxSamples {
		s.kept = append(s.kept, x)
	} else if i := rng.IntN(s.n); i < MaxSamples {
		s.kept[i] = x
	}
}

func (s *sampler) stats() Stats {
	st := Summarize(s.kept)
	st.Count, st.Min, st.Max = s.n, s.min, s.max
	return st
}

// NewAccumulator returns an empty accumulator; its sampling is seeded, so that one run summarised
// twice gives the same report.
func NewAccumulator() *Accumulator {
	return &Accumulator{actions: map[[3]string]int{}, accs: map[summaryKey]*summaryAcc{}, rng: rand.New(rand.NewPCG(1, 2))}
}

// Add folds one result in.
func (ac *Accumulator) Add(r Result) {
	ac.actions[[3]string{r.Phase, r.Group, r.Op}]++
	get := func(ev string) *summaryAcc {
		k := summaryKey{r.Phase, r.Group, r.Op, ev}
		if ac.accs[k] == nil {
			ac.accs[k] = &summaryAcc{}
		}
		return ac.accs[k]
	}
	for _, re := range r.Reactions {
		a := get(re.Event)
		a.fromAction.add(re.At.Sub(r.At).Seconds(), ac.rng)
		if last := r.LastHeartbeat(); silencing[r.Op] && !last.IsZero() {
			a.fromRenewal.add(re.At.Sub(last).Seconds(), ac.rng)
		}
	}
	for _, ev := range r.Missing {
		a := get(ev)
		a.missing++
		i, _ := slices.BinarySearch(a.missingNodes, r.Node)
		if i < MissingListed {
			a.missingNodes = slices.Insert(a.missingNodes, i, r.Node)
			a.missingNodes = a.missingNodes[:min(len(a.missingNodes), MissingListed)]
		}
	}
}

// Summaries returns the summaries of everything added, in the order of phases (then group, op, and
// the events by their median latency, so that they read in the order they happened).
func (ac *Accumulator) Summaries(phases []Phase) []Summary {
	var out []Summary
	for k, a := range ac.accs {
		s := Summary{
			Phase: k.phase, Group: k.group, Op: k.op, Event: k.event,
			Actions: ac.actions[[3]string{k.phase, k.group, k.op}],
			Reacted: a.fromAction.n, Missing: a.missing,
			FromAction: a.fromAction.stats(),
			Samples:    slices.Sorted(slices.Values(a.fromAction.kept)),
		}
		if a.fromAction.n == 0 {
			s.FromAction = Stats{}
		}
		if a.fromAction.n > len(a.fromAction.kept) {
			s.SamplesOf = a.fromAction.n
		}
		if a.fromRenewal.n > 0 {
			st := a.fromRenewal.stats()
			s.FromLastRenewal, s.Samples = &st, slices.Sorted(slices.Values(a.fromRenewal.kept))
		}
		if a.missing > 0 {
			s.MissingNodes = slices.Clone(a.missingNodes)
		}
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

// clone returns a deep copy of ac.
func (ac *Accumulator) clone() *Accumulator {
	c := &Accumulator{actions: maps.Clone(ac.actions), accs: make(map[summaryKey]*summaryAcc, len(ac.accs)), rng: rand.New(rand.NewPCG(3, 4))}
	for k, a := range ac.accs {
		b := *a
		b.fromAction.kept, b.fromRenewal.kept = slices.Clone(a.fromAction.kept), slices.Clone(a.fromRenewal.kept)
		b.missingNodes = slices.Clone(a.missingNodes)
		c.accs[k] = &b
	}
	return c
}
