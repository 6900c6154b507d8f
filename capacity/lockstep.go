package capacity

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/pause"
	"fakelet.dev/fakelet/report"
)

// verdictPoll is how often a shard reads the verdicts it still waits for: a verdict is posted once a
// step, so a second is seconds of reads in a step of minutes.
const verdictPoll = time.Second

// Lockstep is what one shard of a fleet run by several processes needs to grow its slice of every
// step with the others, and to stop with them at the first step any of them saw broken.
//
// Shard i runs, at the step of N nodes, as many nodes as fakelet run --shard i/n runs of a fleet of
// N, numbered from its slice of the fleet of Max nodes (so that growing only adds nodes to it). Every
// shard follows one schedule from Start (Schedule): step k's growth and settle begin at its Begin,
// its hold at its Hold until its End; then each shard posts its verdict (what it measured) and
// reads the others', all due by the step's Due, when the next step begins. Every shard checks the
// levels of the fleet (report.MergeLevels of every shard's verdict), so all stop at the same step.
type Lockstep struct {
	Shard fleetname.Shard
	// Start is when the first step's settle begins in every shard; its nodes register before it.
	Start time.Time
	// VerdictTimeout is how long after each hold every shard's verdict is due: the next step begins
	// then, and a shard whose verdict is not in by then stops them all.
	VerdictTimeout time.Duration
	// RegisterQPS is how fast each shard adds its new nodes: a step's growth takes as long as the
	// largest number of nodes any shard adds at that rate.
	RegisterQPS float64
	Verdicts    Verdicts
}

// StepTimes are when one step's phases begin, the same in every shard.
type StepTimes struct {
	Nodes int
	// Begin is when the step's nodes are added and its settle begins; Hold and End bound its hold;
	// every shard's verdict is due by Due, when the next step begins.
	Begin, Hold, End, Due time.Time
}

// Nodes is how many nodes this shard runs in the step of a fleet of n.
func (l Lockstep) Nodes(n int) int {
	_, count := l.Shard.Slice(n)
	return count
}

// Validate says what in c and l the shards cannot step together with, naming its flag.
func (l Lockstep) Validate(c Config) error {
	if err := l.Shard.Validate(c.Start); err != nil {
		return fmt.Errorf("--start %d: %w: every shard needs a node at the first step", c.Start, err)
	}
	if l.VerdictTimeout <= 0 {
		return fmt.Errorf("--verdict-timeout must be positive, got %v", l.VerdictTimeout)
	}
	if !(l.RegisterQPS > 0) || math.IsInf(l.RegisterQPS, 0) {
		return fmt.Errorf("--register-qps must be positive and finite, got %v", l.RegisterQPS)
	}
	sizes := c.Sizes()
	for k := 1; k < len(sizes); k++ {
		for i := range l.Shard.Count {
			s := Lockstep{Shard: fleetname.Shard{Index: i, Count: l.Shard.Count}}
			if before, after := s.Nodes(sizes[k-1]), s.Nodes(sizes[k]); after < before {
				return fmt.Errorf("--step %d: with %d shards, shard %d/%d would run %d nodes at the step of %d and %d at the step of %d, and a shard's slice only grows: "+
					"give a --step of at least %d (the shard count), and a --max at least that many past a step, or none past it",
					c.Step, l.Shard.Count, i, l.Shard.Count, before, sizes[k-1], after, sizes[k], l.Shard.Count)
			}
		}
	}
	return nil
}

// Schedule is every step's times. The first step's nodes are registered before Start; each later
// step's growth takes the largest addition of any shard at RegisterQPS, rounded up to a second.
func (l Lockstep) Schedule(c Config) []StepTimes {
	var out []StepTimes
	begin, prev := l.Start, 0
	for k, n := range c.Sizes() {
		var grow time.Duration
		if k > 0 {
			most := 0
			for i := range l.Shard.Count {
				s := Lockstep{Shard: fleetname.Shard{Index: i, Count: l.Shard.Count}}
				most = max(most, s.Nodes(n)-s.Nodes(prev))
			}
			grow = time.Duration(math.Ceil(float64(most)/l.RegisterQPS)) * time.Second
		}
		st := StepTimes{Nodes: n, Begin: begin, Hold: begin.Add(grow + c.Settle)}
		st.End = st.Hold.Add(c.Hold)
		st.Due = st.End.Add(l.VerdictTimeout)
		out = append(out, st)
		begin, prev = st.Due, n
	}
	return out
}

// Duration is how long the whole schedule lasts, from Start to the last step's Due.
func (l Lockstep) Duration(c Config) time.Duration {
	s := l.Schedule(c)
	return s[len(s)-1].Due.Sub(l.Start)
}

// verdict posts what this shard measured of the step st and waits until every shard's verdict is
// in, or until the step's Due: it returns the fleet's levels, or which shards were missing.
func (l Lockstep) verdict(ctx context.Context, c Config, st StepTimes, m Measured, clk clock.Clock) ([]report.Level, error) {
	if err := l.Verdicts.Publish(ctx, st.Nodes, m, st.Due); err != nil {
		return nil, fmt.Errorf("post shard %v's verdict: %w", l.Shard, err)
	}
	for {
		got, err := l.Verdicts.Read(ctx, st.Nodes)
		if err != nil {
			return nil, fmt.Errorf("read the shards' verdicts: %w", err)
		}
		if len(got) >= l.Shard.Count {
			levels := make([][]report.Level, 0, l.Shard.Count)
			for i := range l.Shard.Count {
				levels = append(levels, c.Levels.Measure(got[i], c.RenewInterval))
			}
			return report.MergeLevels(levels)
		}
		left := st.Due.Sub(clk.Now())
		if left <= 0 {
			var missing []string
			for i := range l.Shard.Count {
				if _, ok := got[i]; !ok {
					missing = append(missing, fmt.Sprintf("%d/%d", i, l.Shard.Count))
				}
			}
			return nil, fmt.Errorf("shard %s posted no verdict by %s (--verdict-timeout %v after the hold): the shards cannot agree on the step, so this one stops too",
				strings.Join(missing, ", shard "), st.Due.Format(time.RFC3339), l.VerdictTimeout)
		}
		if err := pause.On(ctx, clk, min(verdictPoll, left)); err != nil {
			return nil, err
		}
	}
}
