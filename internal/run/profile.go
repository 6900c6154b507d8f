package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/scenario"
)

// profileRun is a profile being played on a fleet.
type profileRun struct {
	plan   *profiles.Plan
	runner *scenario.Runner
	done   chan error
}

// startProfile plays plan on f in the background once f runs, logging to log; when the last phase
// ended it calls end, which ends the run (and so the fleet, which then cleans up). Each phase and
// applied op is also passed to hooks.
func startProfile(ctx context.Context, end context.CancelFunc, f *fleet.Fleet, plan *profiles.Plan, base scenario.Config,
	log io.Writer, hooks ...profileHooks) (*profileRun, error) {
	cfg := base // the flags' settings: ready timeout, shard, start time
	cfg.Plan, cfg.Fleet, cfg.Log = plan, f, log
	cfg.OnPhase = func(profile string, ph scenario.PhaseRecord) {
		for _, h := range hooks {
			if h.onPhase != nil {
				h.onPhase(profile, ph)
			}
		}
	}
	cfg.OnApplied = func(a scenario.Applied) {
		for _, h := range hooks {
			if h.onApplied != nil {
				h.onApplied(a)
			}
		}
	}
	runner, err := scenario.New(cfg)
	if err != nil {
		return nil, err
	}
	p := plan.Profile
	fmt.Fprintf(log, "profile %s (%s): %d nodes in %d zone(s), seed %d, %d phases over %v once every node is Ready; then the run ends\n",
		p.Metadata.Name, p.Source, plan.Nodes, max(p.Spec.Zones, 1), plan.Seed, len(p.Spec.Phases), runner.Duration())
	if line := lockstepLine(cfg, f); line != "" {
		fmt.Fprintln(log, line)
	}
	pr := &profileRun{plan: plan, runner: runner, done: make(chan error, 1)}
	go func() {
		err := runner.Run(ctx)
		end()
		pr.done <- err
	}()
	return pr, nil
}

// profileHooks receive a profile run's phases and applied ops; either may be nil.
type profileHooks struct {
	onPhase   func(string, scenario.PhaseRecord)
	onApplied func(scenario.Applied)
}

// metricsHooks count the profile's phases and applied ops in the run's metrics.
func metricsHooks(m *runMetrics) profileHooks {
	return profileHooks{
		onPhase: func(profile string, ph scenario.PhaseRecord) { m.SetPhase(profile, ph.Name) },
		onApplied: func(a scenario.Applied) {
			if a.Err == "" {
				m.ActionApplied(string(a.Op), a.Group)
			}
		},
	}
}

// wait returns how the profile's run ended: nil after its last phase, else why it was cut short.
// The run's context must have ended, or be about to.
func (pr *profileRun) wait() error { return <-pr.done }

// summary is the profile's line of the run summary: how far it came and what it applied.
func (pr *profileRun) summary(runErr error) string {
	rec := pr.runner.Record()
	phases := len(pr.plan.Profile.Spec.Phases)
	ops := fmt.Sprintf("%d ops applied, %d failed", rec.AppliedOK, rec.AppliedFailed)
	if w := rec.Workloads; w != nil {
		ops += fmt.Sprintf("; workloads: %d of %d objects created", w.Created, w.Objects)
		if w.Failed > 0 {
			ops += fmt.Sprintf(" (first failure: %s)", w.FirstError)
		}
	}
	switch {
	case runErr == nil:
		return fmt.Sprintf("%s: all %d phases over %v, %s", rec.Profile, phases, pr.runner.Duration(), ops)
	case len(rec.Phases) == 0:
		return fmt.Sprintf("%s: ended (%s) before its first phase, while waiting for Ready nodes", rec.Profile, why(runErr))
	default:
		last := rec.Phases[len(rec.Phases)-1]
		return fmt.Sprintf("%s: cut short (%s) in phase %d/%d %s, %v after the first phase began; %s",
			rec.Profile, why(runErr), len(rec.Phases), phases, last.Name, last.End.Sub(rec.Start).Round(time.Second), ops)
	}
}

func why(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "--duration"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	}
	return err.Error()
}
