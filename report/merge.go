package report

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
)

// Merge combines the reports of the shards of one distributed run (fakelet run --shard) into the
// report of the whole fleet:
//   - counts add up: Parameters.Nodes, node transitions and Lease renewals seen, each reaction's
//     actions, reactions and missing ones, the fleet's own requests (Load.*.Fleet);
//   - the node-state timeline is the sum of the shards' step functions, at every point any shard has;
//   - storms are each shard's, in order of their start: a shard sees only its own nodes fall
//     behind and catch up, so one restart of the whole fleet is a storm per shard;
//   - phases run from the earliest shard's start to the latest shard's end;
//   - reaction latencies are recomputed from the shards' samples, which every report carries: the
//     statistics the samples are of (FromLastRenewal for silencing ops, else FromAction) are exact;
//     the other (FromAction beside FromLastRenewal) is approximate: counts add, min and max are
//     exact, quantiles are the shards' weighted by their counts;
//   - the control plane's load (apiserver, etcd, controller manager) is the first report's: every
//     shard scraped the same control plane, so it is the same load, not a part of it;
//   - the shards of a sharded capacity run (fakelet capacity --shard) merge their steps' levels and
//     find the answer again (mergeCapacity); their reports must be of every shard of one run.
//
// The reports must be of one profile (or none), against one server, with as many phases.
func Merge(shards []*Report) (*Report, error) {
	if len(shards) == 0 {
		return nil, errors.New("merge: no reports")
	}
	first := shards[0]
	capacity, err := mergeCapacity(shards)
	if err != nil {
		return nil, err
	}
	for i, s := range shards[1:] {
		switch {
		case s.Profile != first.Profile:
			return nil, fmt.Errorf("merge: report %d is of profile %q, report 1 of %q", i+2, s.Profile, first.Profile)
		case s.Target.Server != first.Target.Server:
			return nil, fmt.Errorf("merge: report %d ran against %s, report 1 against %s", i+2, s.Target.Server, first.Target.Server)
		case len(s.Phases) != len(first.Phases):
			return nil, fmt.Errorf("merge: report %d has %d phases, report 1 has %d", i+2, len(s.Phases), len(first.Phases))
		}
	}
	m := *first
	m.Capacity = capacity
	m.Parameters.Nodes, m.Parameters.Args = 0, nil
	m.Phases = slices.Clone(first.Phases)
	m.Nodes = record.Nodes{}
	m.Load.Phases = slices.Clone(first.Load.Phases)
	for _, s := range shards {
		m.Parameters.Nodes += s.Parameters.Nodes
		if s.Start.Before(m.Start) {
			m.Start = s.Start
		}
		if s.End.After(m.End) {
			m.End = s.End
		}
		for i, p := range s.Phases {
			if p.Start.Before(m.Phases[i].Start) {
				m.Phases[i].Start = p.Start
			}
			if p.End.After(m.Phases[i].End) {
				m.Phases[i].End = p.End
			}
		}
		m.Nodes.Transitions += s.Nodes.Transitions
		m.Nodes.LeaseRenewalsSeen += s.Nodes.LeaseRenewalsSeen
	}
	m.Nodes.Timeline = mergeTimelines(shards)
	m.Reactions = mergeReactions(shards)
	m.FalseAlarms = mergeFalseAlarms(shards)
	// Each shard's session watches the one namespace, and pairs the workloads' pods with the ops on
	// its own nodes: the first shard's section stands for the run.
	for _, s := range shards {
		if m.Workloads == nil {
			m.Workloads = s.Workloads
		}
	}
	m.Storms, m.StormsDropped = nil, 0
	for _, s := range shards {
		m.Storms = append(m.Storms, s.Storms...)
		m.StormsDropped += s.StormsDropped
	}
	slices.SortStableFunc(m.Storms, func(a, b record.Storm) int { return a.Start.Compare(b.Start) })
	m.GeneratorBound = false
	for _, s := range shards {
		m.GeneratorBound = m.GeneratorBound || s.GeneratorBound
	}
	m.Load.Run.SendLag = mergeSendLag(shards, func(r *Report) *load.SendLag { return r.Load.Run.SendLag })
	m.Load.Run.Fleet = mergeFleet(shards, func(r *Report) []load.FleetRequests { return r.Load.Run.Fleet })
	for i := range m.Load.Phases {
		m.Load.Phases[i].Fleet = mergeFleet(shards, func(r *Report) []load.FleetRequests {
			if i < len(r.Load.Phases) {
				return r.Load.Phases[i].Fleet
			}
			return nil
		})
		m.Load.Phases[i].SendLag = mergeSendLag(shards, func(r *Report) *load.SendLag {
			if i < len(r.Load.Phases) {
				return r.Load.Phases[i].SendLag
			}
			return nil
		})
	}
	return &m, nil
}

// mergeTimelines sums the shards' node-state step functions at every time any of them has a point;
// before a shard's first point it counts no nodes.
func mergeTimelines(shards []*Report) []observe.StateCount {
	var times []time.Time
	for _, s := range shards {
		for _, p := range s.Nodes.Timeline {
			times = append(times, p.At)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
	var out []observe.StateCount
	for _, t := range times {
		sum := observe.StateCount{At: t}
		for _, s := range shards {
			tl := s.Nodes.Timeline
			i := sort.Search(len(tl), func(i int) bool { return tl[i].At.After(t) }) - 1
			if i >= 0 {
				sum.Ready += tl[i].Ready
				sum.NotReady += tl[i].NotReady
				sum.Unknown += tl[i].Unknown
			}
		}
		out = append(out, sum)
	}
	return out
}

// mergeReactions adds the shards' reaction summaries up by phase, group, op and event, in the order
// they first appear.
func mergeReactions(shards []*Report) []reaction.Summary {
	type key struct{ phase, group, op, event string }
	var order []key
	parts := map[key][]reaction.Summary{}
	for _, s := range shards {
		for _, r := range s.Reactions {
			k := key{r.Phase, r.Group, r.Op, r.Event}
			if parts[k] == nil {
				order = append(order, k)
			}
			parts[k] = append(parts[k], r)
		}
	}
	out := make([]reaction.Summary, 0, len(order))
	for _, k := range order {
		out = append(out, mergeSummary(parts[k]))
	}
	return out
}

func mergeSummary(parts []reaction.Summary) reaction.Summary {
	m := reaction.Summary{Phase: parts[0].Phase, Group: parts[0].Group, Op: parts[0].Op, Event: parts[0].Event}
	var fromAction, fromRenewal []reaction.Stats
	renewals, reacted := 0, 0 // parts whose samples are from the last renewal; parts with samples
	for _, p := range parts {
		if p.Reacted > 0 {
			reacted++
		}
		m.Actions += p.Actions
		m.Reacted += p.Reacted
		m.Missing += p.Missing
		m.MissingNodes = append(m.MissingNodes, p.MissingNodes...)
		m.Samples = append(m.Samples, p.Samples...)
		fromAction = append(fromAction, p.FromAction)
		if p.FromLastRenewal != nil {
			fromRenewal = append(fromRenewal, *p.FromLastRenewal)
			renewals++
		}
	}
	slices.Sort(m.MissingNodes)
	m.MissingNodes = m.MissingNodes[:min(len(m.MissingNodes), reaction.MissingListed)]
	if len(m.MissingNodes) == 0 {
		m.MissingNodes = nil
	}
	sampled := slices.ContainsFunc(parts, func(p reaction.Summary) bool { return p.SamplesOf > 0 })
	switch {
	case sampled: // a shard kept a sample of its latencies: statistics of the samples would miscount
		m.SamplesOf = m.Reacted
		m.FromAction = approximate(fromAction)
		if renewals > 0 {
			st := approximate(fromRenewal)
			m.FromLastRenewal = &st
		}
	case renewals == 0: // the samples are the latencies from the action
		m.FromAction = reaction.Summarize(m.Samples)
	case renewals == reacted: // the samples are the latencies from the last renewal
		st := reaction.Summarize(m.Samples)
		m.FromLastRenewal = &st
		m.FromAction = approximate(fromAction)
	default: // some shards measured from the last renewal, some could not: both approximate
		st := approximate(fromRenewal)
		m.FromLastRenewal = &st
		m.FromAction = approximate(fromAction)
	}
	return m
}

// approximate merges latency statistics without their samples: counts add, min and max are exact,
// quantiles are weighted by count.
func approximate(parts []reaction.Stats) reaction.Stats {
	var m reaction.Stats
	var p50, p90, p99 float64
	for _, p := range parts {
		if p.Count == 0 {
			continue
		}
		if m.Count == 0 || p.Min < m.Min {
			m.Min = p.Min
		}
		m.Max = max(m.Max, p.Max)
		m.Count += p.Count
		w := float64(p.Count)
		p50, p90, p99 = p50+w*p.P50, p90+w*p.P90, p99+w*p.P99
	}
	if m.Count > 0 {
		n := float64(m.Count)
		m.P50, m.P90, m.P99 = p50/n, p90/n, p99/n
	}
	return m
}

// mergeFalseAlarms adds up the shards' false alarms by phase, group and event; each shard's nodes are
// its own, so the nodes named are the first few of all by name.
func mergeFalseAlarms(shards []*Report) []falsealarm.Count {
	type key struct{ phase, group, event string }
	var order []key
	sums := map[key]*falsealarm.Count{}
	for _, s := range shards {
		for _, c := range s.FalseAlarms {
			k := key{c.Phase, c.Group, c.Event}
			m := sums[k]
			if m == nil {
				m = &falsealarm.Count{Phase: c.Phase, Group: c.Group, Event: c.Event}
				sums[k] = m
				order = append(order, k)
			}
			m.Count += c.Count
			m.SendLag += c.SendLag
			m.ServerLatency += c.ServerLatency
			m.Rejection += c.Rejection
			m.None += c.None
			m.Nodes = append(m.Nodes, c.Nodes...)
		}
	}
	var out []falsealarm.Count
	for _, k := range order {
		m := *sums[k]
		slices.Sort(m.Nodes)
		m.Nodes = slices.Compact(m.Nodes)
		m.Nodes = m.Nodes[:min(len(m.Nodes), falsealarm.NodesListed)]
		out = append(out, m)
	}
	return out
}

// mergeSendLag is the shards' ticks with the worst shard's quantiles: a fleet is as late as its
// slowest shard, and the warning of a generator-bound run must not be averaged away.
func mergeSendLag(shards []*Report, of func(*Report) *load.SendLag) *load.SendLag {
	var m *load.SendLag
	for _, s := range shards {
		l := of(s)
		if l == nil {
			continue
		}
		if m == nil {
			m = &load.SendLag{}
		}
		m.Ticks += l.Ticks
		m.P50, m.P99 = max(m.P50, l.P50), max(m.P99, l.P99)
	}
	return m
}

// mergeFleet adds up the fleet's own requests of the shards by verb and resource; their latency
// quantiles are weighted by request count (approximate).
func mergeFleet(shards []*Report, rows func(*Report) []load.FleetRequests) []load.FleetRequests {
	type key struct{ verb, resource string }
	var order []key
	sums := map[key]*load.FleetRequests{}
	for _, s := range shards {
		for _, r := range rows(s) {
			k := key{r.Verb, r.Resource}
			m := sums[k]
			if m == nil {
				m = &load.FleetRequests{Verb: r.Verb, Resource: r.Resource}
				sums[k] = m
				order = append(order, k)
			}
			n := r.OK + r.Errors
			m.P50 += n * r.P50
			m.P99 += n * r.P99
			m.OK += r.OK
			m.Errors += r.Errors
			m.Rate += r.Rate
			m.RequestBytes += r.RequestBytes
			m.ResponseBytes += r.ResponseBytes
		}
	}
	var out []load.FleetRequests
	for _, k := range order {
		m := *sums[k]
		if n := m.OK + m.Errors; n > 0 {
			m.P50, m.P99 = m.P50/n, m.P99/n
		}
		out = append(out, m)
	}
	return out
}
