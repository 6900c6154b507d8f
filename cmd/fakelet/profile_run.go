package main

import (
	"fmt"
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
