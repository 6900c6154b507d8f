package main

import (
	"testing"
	"time"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// prepareCapacity prepares `fakelet capacity` as RunE does.
func prepareCapacity(t *testing.T, args ...string) (fleet.Config, *capacityFlags, error) {
	t.Helper()
	cf := &capacityFlags{}
	cmd := newCapacityCommandFor(cf)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := cf.prepare(cmd.Flags())
	return cfg.Config(), cf, err
}

// TestCapacityShardRunsItsPartOfEachStep: shard 1/3 (from $FAKELET_SHARD) numbers its nodes from its
// slice of --max's fleet and starts with its part of the first step; the start is agreed (--start-at
// auto) a minute plus twice its first nodes' registration ahead; every shard shares the run's hash,
// which another step plan changes.
func TestCapacityShardRunsItsPartOfEachStep(t *testing.T) {
	t.Setenv(fleetname.ShardEnv, "1/3")
	args := []string{"--start", "300", "--step", "300", "--max", "3000", "--settle", "10s", "--hold", "20s", "--verdict-timeout", "5s"}
	cfg, cf, err := prepareCapacity(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	sf := cf.run.shard
	if cfg.FirstIndex != 1000 || cfg.Nodes != 100 || cf.lockstep == nil || cf.lockstep.Shard != (fleetname.Shard{Index: 1, Count: 3}) {
		t.Fatalf("%d nodes from %d, lockstep %+v: want 100 from 1000 as shard 1/3", cfg.Nodes, cfg.FirstIndex, cf.lockstep)
	}
	if !sf.auto || sf.startDelay != time.Minute+2*time.Second {
		t.Errorf("start auto %v, delay %v: want auto, 1m2s (100 nodes at 100/s, twice, plus a minute)", sf.auto, sf.startDelay)
	}
	// Ten steps: each settles 10 s (after 1 s of growth, but the first), holds 20 s and waits 5 s.
	if want := 10*35*time.Second + 9*time.Second; sf.duration != want {
		t.Errorf("the schedule lasts %v, want %v", sf.duration, want)
	}
	if sf.run.String() != "capacity steps of 300 from 300 to 3000 over 3000 nodes in 3 shard(s)" {
		t.Errorf("run %q", sf.run)
	}
	_, other, err := prepareCapacity(t, append(args, "--step", "900")...)
	if err != nil {
		t.Fatal(err)
	}
	if other.run.shard.run.Hash == sf.run.Hash {
		t.Errorf("runs of other steps share the hash %s", sf.run.Hash)
	}
	if got := cf.nodes(3000); got != 1000 {
		t.Errorf("shard 1/3 runs %d nodes of the last step, want 1000", got)
	}
}

// TestUnshardedCapacityRunsTheWholeFleet: without --shard, every step is this process's.
func TestUnshardedCapacityRunsTheWholeFleet(t *testing.T) {
	t.Setenv(fleetname.ShardEnv, "")
	cfg, cf, err := prepareCapacity(t, "--start", "300", "--step", "300", "--max", "3000")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FirstIndex != 0 || cfg.Nodes != 300 || cf.lockstep != nil || cf.nodes(3000) != 3000 {
		t.Errorf("%d nodes from %d, lockstep %+v", cfg.Nodes, cfg.FirstIndex, cf.lockstep)
	}
}
