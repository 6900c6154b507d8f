package report

import (
	"fmt"
	"slices"
)

// MergeLevels is the fleet's levels in one step from its shards' levels in it: a Sum level's values
// add up, any other's is the highest (the worst any shard saw), and the fleet's level is broken
// where its value passes its limit. A level some shard left out (one that did not apply there) is
// the others'. The shards must hold each level to one limit.
func MergeLevels(shards [][]Level) ([]Level, error) {
	var out []Level
	for _, levels := range shards {
		for _, l := range levels {
			i := slices.IndexFunc(out, func(m Level) bool { return m.Level == l.Level })
			if i < 0 {
				out = append(out, l)
				continue
			}
			m := &out[i]
			if m.Limit != l.Limit || m.Unit != l.Unit || m.Sum != l.Sum {
				return nil, fmt.Errorf("level %s is held to %s in one shard and to %s in another", l.Level, l.format(l.Limit), m.format(m.Limit))
			}
			if l.Sum {
				m.Value += l.Value
			} else {
				m.Value = max(m.Value, l.Value)
			}
		}
	}
	for i := range out {
		out[i].Broken = out[i].Value > out[i].Limit
	}
	return out, nil
}

// answer sets Held and Broke from the steps: the first step with a broken level broke the first
// of them, and the step before it is the largest that held; without one, the last step held.
func (c *Capacity) answer() {
	c.Held, c.Broke = 0, nil
	for _, st := range c.Steps {
		if i := slices.IndexFunc(st.Levels, func(l Level) bool { return l.Broken }); i >= 0 {
			broke := st.Levels[i]
			c.Broke = &broke
			return
		}
		c.Held = st.Nodes
	}
}

// mergeCapacity merges the capacity answers of the reports of every shard of one sharded capacity
// run: each step's levels as MergeLevels does, its hold from the earliest shard's start to the
// latest's end, the control plane's CPU and memory the first report's (every shard measured the
// same control plane), and the answer again from the merged levels. nil if no report is a
// capacity run's.
func mergeCapacity(shards []*Report) (*Capacity, error) {
	first := shards[0].Capacity
	for i, s := range shards {
		c := s.Capacity
		switch {
		case (c == nil) != (first == nil):
			return nil, fmt.Errorf("merge: report %d is a capacity run's and report %d is not", capacityIndex(shards, true), capacityIndex(shards, false))
		case c == nil:
			continue
		case c.Shards == nil || c.Shards.Shard == "":
			return nil, fmt.Errorf("merge: report %d is of a capacity run that was not sharded (or is merged already): "+
				"only the reports of the shards of one fakelet capacity --shard run merge", i+1)
		case c.Start != first.Start || c.Step != first.Step || c.Max != first.Max || c.Settle != first.Settle || c.Hold != first.Hold:
			return nil, fmt.Errorf("merge: report %d grew in steps of %d from %d to %d nodes, settling %s and held %s; report 1 in steps of %d from %d to %d, settling %s and held %s: "+
				"not shards of one capacity run", i+1, c.Step, c.Start, c.Max, c.Settle, c.Hold, first.Step, first.Start, first.Max, first.Settle, first.Hold)
		case c.Shards.Count != first.Shards.Count || c.Shards.Run != first.Shards.Run || !c.Shards.Start.Equal(first.Shards.Start):
			return nil, fmt.Errorf("merge: report %d is of shard %s of run %s, started at %s; report 1 of shard %s of run %s, started at %s: not shards of one capacity run",
				i+1, c.Shards.Shard, c.Shards.Run, c.Shards.Start.Format("2006-01-02T15:04:05Z07:00"),
				first.Shards.Shard, first.Shards.Run, first.Shards.Start.Format("2006-01-02T15:04:05Z07:00"))
		case len(c.Steps) != len(first.Steps):
			return nil, fmt.Errorf("merge: report %d (shard %s) has %d steps, report 1 (shard %s) %d: the shards did not stop together",
				i+1, c.Shards.Shard, len(c.Steps), first.Shards.Shard, len(first.Steps))
		}
	}
	if first == nil {
		return nil, nil
	}
	seen := map[string]int{}
	for i, s := range shards {
		if j, dup := seen[s.Capacity.Shards.Shard]; dup {
			return nil, fmt.Errorf("merge: reports %d and %d are both of shard %s", j+1, i+1, s.Capacity.Shards.Shard)
		}
		seen[s.Capacity.Shards.Shard] = i
	}
	var missing []string
	for i := range first.Shards.Count {
		if name := fmt.Sprintf("%d/%d", i, first.Shards.Count); !has(seen, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: no report of shard(s) %v of the %d: the fleet's levels need every shard's", missing, first.Shards.Count)
	}
	m := *first
	m.Shards = &CapacityShards{Count: first.Shards.Count, Run: first.Shards.Run, Start: first.Shards.Start}
	m.Steps = make([]CapacityStep, len(first.Steps))
	for k, st := range first.Steps {
		merged := CapacityStep{Nodes: st.Nodes, From: st.From, To: st.To, Processes: st.Processes}
		var levels [][]Level
		for i, s := range shards {
			sk := s.Capacity.Steps[k]
			if sk.Nodes != st.Nodes {
				return nil, fmt.Errorf("merge: report %d's step %d is of %d nodes, report 1's of %d", i+1, k+1, sk.Nodes, st.Nodes)
			}
			if sk.From.Before(merged.From) {
				merged.From = sk.From
			}
			if sk.To.After(merged.To) {
				merged.To = sk.To
			}
			levels = append(levels, sk.Levels)
		}
		var err error
		if merged.Levels, err = MergeLevels(levels); err != nil {
			return nil, fmt.Errorf("merge: the step of %d nodes: %w", st.Nodes, err)
		}
		m.Steps[k] = merged
	}
	m.answer()
	return &m, nil
}

func has(m map[string]int, k string) bool { _, ok := m[k]; return ok }

// capacityIndex is the 1-based index of the first report that is (or is not) a capacity run's.
func capacityIndex(shards []*Report, capacity bool) int {
	return slices.IndexFunc(shards, func(r *Report) bool { return (r.Capacity != nil) == capacity }) + 1
}
