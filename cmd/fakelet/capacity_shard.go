package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/capacity"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/lockstep"
)

// defaultVerdictTimeout leaves room for the scrapes at a hold's end, which a busy apiserver answers
// seconds late, before a shard's verdict is due.
const defaultVerdictTimeout = 30 * time.Second

// addCapacityShardFlags binds fakelet capacity's flags for one shard of a fleet run by several
// processes (docs/capacity.md): fakelet run's, bound to the same shardFlags, with what they mean here.
func addCapacityShardFlags(f *pflag.FlagSet, cf *capacityFlags) {
	sf := &cf.run.shard
	f.StringVar(&sf.shard, "shard", "", "grow shard i of n of every step (i/n, 0-based; auto/n from the StatefulSet pod ordinal), in lockstep with the other shards "+
		"(default: $"+fleetname.ShardEnv+", else the whole fleet in this process)")
	f.StringVar(&sf.startAt, "start-at", "", "with --shard: when the first step's settle begins in every shard (RFC 3339), or auto: "+
		"the first shard writes now + --start-delay in a Lease in --coordination-namespace, and the others read it (default with --shard: auto)")
	f.DurationVar(&sf.startDelay, "start-delay", 0, "with --start-at auto: how long after the first shard starts the first step's settle begins "+
		"(default: twice this shard's first nodes / --register-qps, plus 1m)")
	f.StringVar(&sf.namespace, "coordination-namespace", lockstep.DefaultNamespace, "with --shard: the namespace of the start Lease and of the Leases "+
		"in which each shard posts its verdict on each step")
	f.DurationVar(&cf.verdictTimeout, "verdict-timeout", defaultVerdictTimeout, "with --shard: how long after each hold every shard's verdict is due; "+
		"the next step begins then, and a shard whose verdict is late stops them all")
}

// shard reads the shard flags of this shard's slice of --max's fleet (cfg, resolved; the slice is
// shardFlags.slice's): unsharded, it refuses the flags that apply to shards only; sharded, it
// decides the lockstep, the start and what every shard must share.
func (cf *capacityFlags) shard(cfg fleet.Config, flags *pflag.FlagSet) error {
	sf := &cf.run.shard
	if !sf.parsed.Sharded() {
		for _, name := range []string{"start-at", "start-delay", "coordination-namespace", "verdict-timeout"} {
			if flags.Changed(name) {
				return fmt.Errorf("--%s applies to a sharded run (--shard i/n)", name)
			}
		}
		return nil
	}
	l := capacity.Lockstep{Shard: sf.parsed, VerdictTimeout: cf.verdictTimeout, RegisterQPS: cfg.RegisterQPS}
	if err := l.Validate(cf.steps); err != nil {
		return err
	}
	cf.lockstep = &l
	if sf.startAt == "" {
		sf.startAt = "auto"
	}
	first := cfg
	first.Nodes = l.Nodes(cf.steps.Start)
	if err := sf.start(first, flags); err != nil {
		return err
	}
	s := cf.steps
	var err error
	sf.run, err = lockstep.RunOfParameters(fmt.Sprintf("capacity steps of %d from %d to %d", s.Step, s.Start, s.Max), s.Max, sf.parsed.Count, struct {
		Steps          capacity.Config
		Prefix         string
		Mode           string
		Footprint      string
		RegisterQPS    float64
		VerdictTimeout time.Duration
	}{s, cfg.NamePrefix, string(cfg.Heartbeat.Mode), string(cfg.Footprint), cfg.RegisterQPS, cf.verdictTimeout})
	sf.duration = l.Duration(s)
	return err
}
