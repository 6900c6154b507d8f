package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/scenario"
)

// shardFlags are `fakelet run`'s flags for one shard of a fleet run by many processes
// (docs/distributed.md).
type shardFlags struct {
	shard   string
	startAt string
	// hostname names the pod for --shard auto/n; empty reads the machine's (tests set it).
	hostname string

	parsed fleet.Shard
	at     time.Time
	now    func() time.Time // time.Now unless a test sets it
}

func addShardFlags(f *pflag.FlagSet, sf *shardFlags) {
	f.StringVar(&sf.shard, "shard", "", "run shard i of n of the fleet (i/n, 0-based): a contiguous slice of its node numbers; "+
		"auto/n takes i from the StatefulSet pod ordinal in the hostname NAME-<ordinal> (default: $"+fleet.ShardEnv+", else the whole fleet)")
	f.StringVar(&sf.startAt, "start-at", "", "with --profile: begin the first phase at this time (RFC 3339), so that every shard's phases begin together; "+
		"the run fails if this shard's nodes are not Ready by then")
}

// apply parses the shard flags and returns the slice of cfg (the whole fleet, as --nodes or the
// profile's spec.nodes says) that this shard runs. plan, the profile resolved over the whole fleet,
// may be nil.
func (sf *shardFlags) apply(cfg fleet.Config, plan *profiles.Plan, flags *pflag.FlagSet) (fleet.Config, error) {
	spec, from := sf.shard, "--shard"
	if !flags.Changed("shard") {
		spec, from = os.Getenv(fleet.ShardEnv), "$"+fleet.ShardEnv
	}
	if spec != "" {
		s, err := fleet.ParseShard(spec, sf.hostname)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", from, err)
		}
		if err := s.Validate(cfg.Nodes); err != nil {
			return cfg, fmt.Errorf("%s: %w", from, err)
		}
		sf.parsed = s
		cfg.FirstIndex, cfg.Nodes = s.Slice(cfg.Nodes)
		if !flags.Changed("connections") {
			cfg.Connections = 0 // the default again: one per 1000 of this shard's nodes
			cfg = cfg.WithDefaults()
		}
	}
	if sf.startAt != "" {
		if plan == nil {
			return cfg, fmt.Errorf("--start-at applies to a profile, and no --profile is given")
		}
		if flags.Changed("ready-timeout") {
			return cfg, fmt.Errorf("--start-at and --ready-timeout both say how long to wait for Ready nodes: give one")
		}
		at, err := time.Parse(time.RFC3339, sf.startAt)
		if err != nil {
			return cfg, fmt.Errorf("--start-at %q: want an RFC 3339 time such as 2026-03-01T12:00:00Z", sf.startAt)
		}
		now := time.Now
		if sf.now != nil {
			now = sf.now
		}
		if !at.After(now()) {
			return cfg, fmt.Errorf("--start-at %s has passed: a shard started late would run out of step with the others", sf.startAt)
		}
		sf.at = at
	}
	return cfg, nil
}

// scenarioConfig is what the flags decide of a profile run: how long to wait for Ready nodes, which
// shard's ops to apply and when the first phase begins.
func (rf *runFlags) scenarioConfig() scenario.Config {
	return scenario.Config{ReadyTimeout: rf.profiles.readyTimeout, Shard: rf.shard.parsed, StartAt: rf.shard.at}
}

// lockstepLine says which nodes of the profile's fleet this shard runs and when its phases begin;
// empty for a whole fleet without --start-at.
func lockstepLine(cfg scenario.Config, f *fleet.Fleet) string {
	var line string
	if cfg.Shard.Sharded() {
		fc := f.Config()
		line = fmt.Sprintf("shard %v: nodes %s..%s of the profile's %d; ops on the other shards' nodes are theirs",
			cfg.Shard, fleet.NodeName(fc.NamePrefix, fc.FirstIndex), fleet.NodeName(fc.NamePrefix, fc.FirstIndex+fc.Nodes-1), cfg.Plan.Nodes)
	}
	if !cfg.StartAt.IsZero() {
		if line != "" {
			line += "; "
		}
		line += fmt.Sprintf("the first phase begins at --start-at %s (in %v), once this shard's nodes are Ready",
			cfg.StartAt.Format(time.RFC3339), time.Until(cfg.StartAt).Round(time.Second))
	}
	return line
}
