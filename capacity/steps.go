package capacity

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/pause"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/report"
)

// Config is what to grow and what to hold each step to.
type Config struct {
	// Start is the first step's nodes, Step how many each next step adds, Max the most: the last
	// step is Max even when Step does not divide Max - Start.
	Start, Step, Max int
	// Settle is how long a step runs before its hold (registration, the node lifecycle controller's
	// first passes); Hold how long its levels are measured.
	Settle, Hold time.Duration
	Levels       Levels
	// RenewInterval is the fleet's kubelets' renew interval, which the renewal level is relative to.
	RenewInterval time.Duration
}

// Validate says what is wrong with c, naming its flag.
func (c Config) Validate() error {
	switch {
	case c.Start <= 0:
		return fmt.Errorf("--start must be positive, got %d", c.Start)
	case c.Step <= 0:
		return fmt.Errorf("--step must be positive, got %d", c.Step)
	case c.Max < c.Start:
		return fmt.Errorf("--max (%d) must be at least --start (%d)", c.Max, c.Start)
	case c.Max > fleetname.MaxNodes:
		return fmt.Errorf("--max %d is more than the largest fleet fakelet runs (%d nodes)", c.Max, fleetname.MaxNodes)
	case c.Settle < 0:
		return fmt.Errorf("--settle must not be negative, got %v", c.Settle)
	case c.RenewInterval <= 0:
		return fmt.Errorf("the renew interval must be positive, got %v", c.RenewInterval)
	case c.Hold < 2*c.RenewInterval:
		// A renewal interval p99 needs a few renewals per node; fewer than two is none.
		return fmt.Errorf("--hold must be at least two renew intervals (%v), got %v", 2*c.RenewInterval, c.Hold)
	}
	return c.Levels.Validate()
}

// Sizes returns the fleet size of every step, from Start to Max.
func (c Config) Sizes() []int {
	var out []int
	for n := c.Start; n < c.Max; n += c.Step {
		out = append(out, n)
	}
	return append(out, c.Max)
}

// Fleet is what Run grows and measures: a fleet with its measurement (every shard of one, in lockstep).
type Fleet interface {
	// Grow makes the fleet n nodes, returning once they are started (not necessarily ready).
	Grow(ctx context.Context, n int) error
	// Hold says that the hold of the step of n nodes begins at at: what happens from then on is
	// the step's.
	Hold(n int, at time.Time)
	// Measure returns what the fleet and the control plane showed in [from, to), and the control
	// plane's CPU and memory over it.
	Measure(ctx context.Context, from, to time.Time) (Measured, []load.Process, error)
}

// StepResult is one step: its size, when its hold ran, what it measured and the levels it broke.
type StepResult struct {
	Nodes    int            `json:"nodes"`
	From     time.Time      `json:"from"`
	To       time.Time      `json:"to"`
	Measured Measured       `json:"measured"`
	Broken   []report.Level `json:"broken,omitempty"`
	// Processes are the CPU and memory of each component scraped over the hold.
	Processes []load.Process `json:"processes,omitempty"`
}

// Result is a capacity run.
type Result struct {
	Steps []StepResult `json:"steps"`
	// Held is the largest size that held every level (0 if the first step broke one).
	Held int `json:"held"`
	// Broke is the level the first broken step broke (the first in the order of Levels' fields if it
	// broke several; all are in its Broken), nil if every step held: the answer is then "at least Max".
	Broke *report.Level `json:"broke,omitempty"`
}

// Run grows f step by step, settling and holding each, and stops at the first step that breaks a
// level (or at Max). A step's error ends the run with the steps so far.
func Run(ctx context.Context, c Config, f Fleet, clk clock.Clock) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	return run(ctx, c, f, clk, nil)
}

// RunInLockstep is Run for one shard of a fleet run by several processes, on l's schedule: f grows
// to this shard's part of each step, and the levels checked are the fleet's, from every shard's
// verdict, so that every shard stops at the same step with the same answer. Each step's result
// holds what this shard measured; the answer is the fleet's.
func RunInLockstep(ctx context.Context, c Config, l Lockstep, f Fleet, clk clock.Clock) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	if err := l.Validate(c); err != nil {
		return Result{}, err
	}
	return run(ctx, c, f, clk, &l)
}

// run's waits are on clk: the wall clock in a command, a fake one in tests.
func run(ctx context.Context, c Config, f Fleet, clk clock.Clock, l *Lockstep) (Result, error) {
	until := func(t time.Time) error { return pause.On(ctx, clk, t.Sub(clk.Now())) }
	var schedule []StepTimes
	if l != nil {
		schedule = l.Schedule(c)
		if late := clk.Now().Sub(l.Start); late > 0 {
			return Result{}, fmt.Errorf("shard %v was ready %v after the start at %s: it cannot step with the other shards (give a longer --start-delay)",
				l.Shard, late.Round(time.Millisecond), l.Start.Format(time.RFC3339))
		}
	}
	var r Result
	for k, n := range c.Sizes() {
		if l != nil {
			if err := until(schedule[k].Begin); err != nil {
				return r, err
			}
		}
		if err := f.Grow(ctx, n); err != nil {
			return r, fmt.Errorf("grow the fleet to %d nodes: %w", n, err)
		}
		var from time.Time
		if l == nil {
			if err := pause.On(ctx, clk, c.Settle); err != nil {
				return r, err
			}
			from = clk.Now()
		} else {
			if err := until(schedule[k].Hold); err != nil {
				return r, err
			}
			from = schedule[k].Hold // the same in every shard, even one that came late
		}
		f.Hold(n, from)
		var to time.Time
		if l == nil {
			if err := pause.On(ctx, clk, c.Hold); err != nil {
				return r, err
			}
			to = clk.Now()
		} else {
			to = schedule[k].End
			if err := until(to); err != nil {
				return r, err
			}
		}
		m, procs, err := f.Measure(ctx, from, to)
		if err != nil {
			return r, fmt.Errorf("measure the step of %d nodes: %w", n, err)
		}
		st := StepResult{Nodes: n, From: from, To: to, Measured: m, Processes: procs}
		if l == nil {
			st.Broken = c.Levels.Check(m, c.RenewInterval)
		} else {
			levels, err := l.verdict(ctx, c, schedule[k], m, clk)
			if err != nil {
				return r, fmt.Errorf("the step of %d nodes: %w", n, err)
			}
			for _, lv := range levels {
				if lv.Broken {
					st.Broken = append(st.Broken, lv)
				}
			}
		}
		r.Steps = append(r.Steps, st)
		if len(st.Broken) > 0 {
			r.Broke = &st.Broken[0]
			return r, nil
		}
		r.Held = n
	}
	return r, nil
}
