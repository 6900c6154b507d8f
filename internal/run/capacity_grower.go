package run

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/capacity"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/report"
)

// grower is a running fleet and its measurement as fakelet capacity's steps grow and measure them
// (capacity.Fleet). Each step is two phases of the run's report: "settle N", from the step's growth
// to its hold, and "N nodes", its hold.
type grower struct {
	f   *fleet.Fleet
	s   *measure.Session
	log io.Writer
	// own is how many of a step's nodes are this process's: all, or its shard's part.
	own func(n int) int

	mu    sync.Mutex
	nodes int // the fleet's size
	hold  string
	// at the hold's start: the fleet's failed heartbeats and its lease renewal intervals so far
	failed    int64
	intervals fleet.Histogram
}

func newGrower(f *fleet.Fleet, s *measure.Session, log io.Writer, own func(int) int) *grower {
	return &grower{f: f, s: s, log: log, own: own, nodes: f.Config().Nodes}
}

func (g *grower) size() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nodes
}

// Grow adds nodes up to n (this process's part of n) at the fleet's register rate, as its first
// nodes started: new machines booting. The first step's nodes are the fleet's own, which its Run
// starts.
func (g *grower) Grow(ctx context.Context, n int) error {
	g.s.PhaseBegan(fmt.Sprintf("settle %d", n), time.Now())
	from, to := g.size(), g.own(n)
	part := ""
	if to != n {
		part = fmt.Sprintf(" (this shard's %d)", to)
	}
	if to > from {
		fmt.Fprintf(g.log, "capacity: %d nodes%s: registering %d more at %g/s\n", n, part, to-from, g.f.Config().RegisterQPS)
	} else {
		fmt.Fprintf(g.log, "capacity: %d nodes%s\n", n, part)
	}
	cfg := g.f.Config()
	limit := rate.NewLimiter(rate.Limit(cfg.RegisterQPS), 1)
	for i := from; i < to; i++ {
		if err := limit.Wait(ctx); err != nil {
			return err
		}
		if err := g.f.AddNodes([]int{cfg.FirstIndex + i}); err != nil {
			return err
		}
		g.mu.Lock()
		g.nodes = i + 1
		g.mu.Unlock()
	}
	return nil
}

// Hold begins the hold's phase and notes what the fleet counted so far.
func (g *grower) Hold(n int, at time.Time) {
	name := report.HoldPhase(n)
	g.s.PhaseBegan(name, at)
	failed := g.failedHeartbeats()
	_, intervals := g.f.Tally().Renewals()
	p := g.f.Progress()
	fmt.Fprintf(g.log, "capacity: %d nodes: %d registered, %d Ready; holding\n", n, p.Registered, p.Ready)
	g.mu.Lock()
	g.hold, g.failed, g.intervals = name, failed, intervals
	g.mu.Unlock()
}

func (g *grower) failedHeartbeats() int64 {
	var n int64
	for _, kind := range []string{agent.KindLease, agent.KindStatus} {
		_, failed := g.f.Tally().Heartbeats(kind)
		n += failed
	}
	return n
}

// Measure ends the hold's phase and reads its levels: the apiserver's from the scrapes at its ends,
// the fleet's from its tally and false alarms.
func (g *grower) Measure(_ context.Context, _, to time.Time) (capacity.Measured, []load.Process, error) {
	g.s.PhaseEnded(to)
	g.mu.Lock()
	name, failedBefore, before := g.hold, g.failed, g.intervals
	g.mu.Unlock()
	ph, ok := g.s.PhaseLoad(name)
	if !ok {
		return capacity.Measured{}, nil, fmt.Errorf("no load recorded for %s", name)
	}
	alarms := 0
	for _, c := range g.s.FalseAlarms(name) {
		alarms += c.Count
	}
	renewalP99 := 0.0
	if g.f.Config().Heartbeat.Mode == heartbeat.ModeLease {
		_, after := g.f.Tally().Renewals()
		renewalP99 = p99Between(before, after)
	}
	m := capacity.FromLoad(ph, alarms, g.failedHeartbeats()-failedBefore, renewalP99)
	return m, ph.Processes, nil
}

// p99Between is the p99 of what a histogram observed between two snapshots of it; 0 if nothing.
func p99Between(before, after fleet.Histogram) float64 {
	if after.Count <= before.Count {
		return 0
	}
	bounds := append(slices.Clone(after.Bounds), math.Inf(1))
	cum := make([]float64, len(bounds))
	for i := range after.Cumulative {
		cum[i] = float64(after.Cumulative[i])
		if i < len(before.Cumulative) {
			cum[i] -= float64(before.Cumulative[i])
		}
	}
	cum[len(cum)-1] = float64(after.Count - before.Count)
	return load.Quantile(0.99, bounds, cum)
}
