package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/scenario"
)

// profileFlags are `fakelet run`'s flags for running a profile.
type profileFlags struct {
	profile      string
	seed         int64
	readyTimeout time.Duration
}

func addProfileFlags(f *pflag.FlagSet, pf *profileFlags) {
	f.StringVar(&pf.profile, "profile", "", "run a profile: a built-in name (see fakelet profiles list) or a YAML file. It sets --nodes, --zones and the heartbeat flags unless they are given, and the run ends after its last phase")
	f.Int64Var(&pf.seed, "seed", 0, "with --profile: the seed of group selection and flap jitter (default: the profile's spec.seed)")
	f.DurationVar(&pf.readyTimeout, "ready-timeout", 0, "with --profile: how long to wait for every node to be Ready before the first phase begins anyway (default: --nodes / --register-qps + 1m)")
}

// prepare checks the flags and returns the fleet to run, resolved, and with --profile the profile
// resolved for it: everything a run needs decided before it touches a cluster.
func (rf *runFlags) prepare(flags *pflag.FlagSet) (fleet.Resolved, *profiles.Plan, error) {
	var p *profiles.Profile
	if rf.profiles.profile != "" {
		var err error
		if p, err = applyProfile(rf, flags); err != nil {
			return fleet.Resolved{}, nil, err
		}
	} else {
		for _, name := range []string{"seed", "ready-timeout"} {
			if flags.Changed(name) {
				return fleet.Resolved{}, nil, fmt.Errorf("--%s applies to a profile, and no --profile is given", name)
			}
		}
	}
	var hb heartbeat.Config // the kubelet's defaults, as the flags' defaults are
	if p != nil {
		hb = p.Spec.Heartbeat.Config()
	}
	cfg, err := rf.config(hb)
	var plan *profiles.Plan
	if err == nil && p != nil {
		plan, err = resolveProfile(p, cfg, rf.profiles.seed) // over the whole fleet, whatever the shard
	}
	if err == nil && plan != nil {
		// Laid over the fleet's --node-label, --node-taint and --node-allocatable.
		cfg.Template.Groups, cfg.Template.GroupOf = plan.NodeShapes()
	}
	if err != nil {
		return fleet.Resolved{}, nil, err
	}
	if cfg, err = rf.shard.apply(cfg, plan, flags); err != nil {
		return fleet.Resolved{}, nil, err
	}
	// The preflight checks what the workloads take, with the fleet's own permissions.
	cfg.Workloads = scenario.WorkloadAccess(plan, rf.shard.parsed)
	resolved, err := resolveFlags(cfg)
	if err != nil {
		return resolved, nil, err
	}
	return resolved, plan, rf.checkLimits(resolved.Config())
}

// applyProfile loads --profile and sets from it every flag the user did not give: --nodes from
// spec.nodes, --zones from spec.zones, --seed from spec.seed (the heartbeat flags are laid over the
// profile's heartbeat configuration by runFlags.config); and the fleet's pods from spec.podsPerNode and spec.podTolerationSeconds. A --zones that disagrees with the profile is refused, since its zone groups depend on it.
func applyProfile(rf *runFlags, flags *pflag.FlagSet) (*profiles.Profile, error) {
	p, err := profiles.Load(rf.profiles.profile)
	if err != nil {
		return nil, err
	}
	rf.fromProfile = map[string]bool{}
	set := func(name string) bool {
		rf.fromProfile[name] = !flags.Changed(name)
		return flags.Changed(name)
	}
	if !set("nodes") {
		rf.fleet.Nodes, rf.nodesFromProfile = p.Spec.Nodes, true
	}
	zones := max(p.Spec.Zones, 1)
	if set("zones") && rf.fleet.Zones != zones {
		return nil, fmt.Errorf("--zones %d: profile %s has %d zone(s), and its groups are chosen by them; change spec.zones instead",
			rf.fleet.Zones, p.Metadata.Name, zones)
	}
	rf.fleet.Zones, rf.fleet.ZoneOf = zones, profiles.ZoneOf
	rf.fleet.PodsPerNode, rf.fleet.PodTolerationSeconds = p.Spec.PodsPerNode, p.Spec.PodTolerationSeconds
	for _, name := range heartbeatFlags {
		set(name) // the heartbeat itself is the profile's configuration, which runFlags.config lays the given flags over
	}
	if !set("seed") {
		rf.profiles.seed = p.Spec.Seed
	}
	if rf.profiles.readyTimeout < 0 {
		return nil, fmt.Errorf("--ready-timeout must not be negative, got %v", rf.profiles.readyTimeout)
	}
	return p, nil
}

// resolveProfile picks the profile's groups for the fleet cfg describes and checks that the runner
// can play it there: all before anything touches a cluster.
func resolveProfile(p *profiles.Profile, cfg fleet.Config, seed int64) (*profiles.Plan, error) {
	pf := p.Fleet()
	pf.Nodes, pf.Seed = cfg.Nodes, seed
	pf.NodeIndex = func(name string) (int, bool) { return fleetname.NodeIndex(cfg.NamePrefix, name) }
	plan, err := p.Resolve(pf)
	if err != nil {
		return nil, err
	}
	if err := scenario.Check(plan, cfg); err != nil {
		return nil, err
	}
	return plan, nil
}

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
