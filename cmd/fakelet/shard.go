package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/lockstep"
	"fakelet.dev/fakelet/internal/run"
	"fakelet.dev/fakelet/profiles"
)

// shardFlags are `fakelet run`'s flags for one shard of a fleet run by many processes
// (docs/distributed.md).
type shardFlags struct {
	shard   string
	startAt string
	// startDelay and namespace are --start-at auto's: how far ahead the first shard sets the start,
	// and where the start Lease lives.
	startDelay time.Duration
	namespace  string
	// hostname names the pod for --shard auto/n; empty reads the machine's (tests set it).
	hostname string

	parsed fleetname.Shard
	at     time.Time
	auto   bool               // --start-at auto: at comes from the start Lease once the cluster is known
	clock  clock.PassiveClock // the wall clock unless a test sets one
	// run is what every shard must share, and duration how long it lasts from its start: the start
	// Lease holds the one and expires after the other.
	run      lockstep.Run
	duration time.Duration
}

func addShardFlags(f *pflag.FlagSet, sf *shardFlags) {
	f.StringVar(&sf.shard, "shard", "", "run shard i of n of the fleet (i/n, 0-based): a contiguous slice of its node numbers; "+
		"auto/n takes i from the StatefulSet pod ordinal in the hostname NAME-<ordinal> (default: $"+fleetname.ShardEnv+", else the whole fleet)")
	f.StringVar(&sf.startAt, "start-at", "", "with --profile: begin the first phase at this time (RFC 3339), so that every shard's phases begin together; "+
		"the run fails if this shard's nodes are not Ready by then. auto: the first shard to start writes the time, now + --start-delay, "+
		"in a Lease in --coordination-namespace, and the others read it (docs/distributed.md)")
	f.DurationVar(&sf.startDelay, "start-delay", 0, "with --start-at auto: how long after the first shard starts phase 0 begins, "+
		"time for every shard to start and register its nodes (default: twice this shard's nodes / --register-qps, plus 1m)")
	f.StringVar(&sf.namespace, "coordination-namespace", lockstep.DefaultNamespace, "with --start-at auto: the namespace of the start Lease "+
		"(fakelet-start-FLEET), which the first shard creates and deletes at the end of its run")
}

// apply parses the shard flags and returns the slice of cfg (the whole fleet, as --nodes or the
// profile's spec.nodes says) that this shard runs. plan, the profile resolved over the whole fleet,
// may be nil.
func (sf *shardFlags) apply(cfg fleet.Config, plan *profiles.Plan, flags *pflag.FlagSet) (fleet.Config, error) {
	cfg, err := sf.slice(cfg, flags)
	if err != nil {
		return cfg, err
	}
	if sf.startAt != "" {
		if plan == nil {
			return cfg, fmt.Errorf("--start-at applies to a profile, and no --profile is given")
		}
		if flags.Changed("ready-timeout") {
			return cfg, fmt.Errorf("--start-at and --ready-timeout both say how long to wait for Ready nodes: give one")
		}
		if sf.run, err = lockstep.RunOf(plan, cfg.NamePrefix, sf.parsed.Count); err != nil {
			return cfg, err
		}
		sf.duration = plan.Schedule().Duration()
	}
	return cfg, sf.start(cfg, flags)
}

// slice parses --shard (or $FAKELET_SHARD) and returns this shard's slice of cfg, the whole fleet.
func (sf *shardFlags) slice(cfg fleet.Config, flags *pflag.FlagSet) (fleet.Config, error) {
	spec, from := sf.shard, "--shard"
	if !flags.Changed("shard") {
		spec, from = os.Getenv(fleetname.ShardEnv), "$"+fleetname.ShardEnv
	}
	if spec == "" {
		return cfg, nil
	}
	s, err := fleetname.ParseShard(spec, sf.hostname)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", from, err)
	}
	if err := s.Validate(cfg.Nodes); err != nil {
		return cfg, fmt.Errorf("%s: %w", from, err)
	}
	sf.parsed = s
	cfg.Shard = s
	cfg.FirstIndex, cfg.Nodes = s.Slice(cfg.Nodes) // unresolved: its default connections are this shard's
	return cfg, nil
}

// start checks --start-at and its flags: a time to come, or auto, whose start delay defaults to
// twice the registration of cfg's nodes plus a minute.
func (sf *shardFlags) start(cfg fleet.Config, flags *pflag.FlagSet) error {
	for _, name := range []string{"start-delay", "coordination-namespace"} {
		if flags.Changed(name) && sf.startAt != "auto" {
			return fmt.Errorf("--%s applies to --start-at auto", name)
		}
	}
	if sf.startDelay < 0 {
		return fmt.Errorf("--start-delay must not be negative, got %v", sf.startDelay)
	}
	switch sf.startAt {
	case "":
		return nil
	case "auto":
		sf.auto = true
		if sf.startDelay == 0 {
			sf.startDelay = 2*time.Duration(float64(cfg.Nodes)/cfg.RegisterQPS*float64(time.Second)) + time.Minute
		}
		return nil
	}
	at, err := time.Parse(time.RFC3339, sf.startAt)
	if err != nil {
		return fmt.Errorf("--start-at %q: want an RFC 3339 time such as 2026-03-01T12:00:00Z, or auto", sf.startAt)
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if sf.clock != nil {
		clk = sf.clock
	}
	if !at.After(clk.Now()) {
		return fmt.Errorf("--start-at %s has passed: a shard started late would run out of step with the others", sf.startAt)
	}
	sf.at = at
	return nil
}

// options are the shard flags as the run takes them, once apply has parsed them.
func (sf *shardFlags) options() run.ShardOptions {
	return run.ShardOptions{Shard: sf.parsed, StartAt: sf.at, Auto: sf.auto, Namespace: sf.namespace,
		Delay: sf.startDelay, Run: sf.run, Duration: sf.duration, Hostname: sf.hostname}
}
