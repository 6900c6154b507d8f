package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestInvalidCapacityFlagsAreRefusedClearly: each bad value stops fakelet capacity before it reaches
// a cluster (a kubeconfig that does not exist: a value wrongly accepted fails on loading it).
func TestInvalidCapacityFlagsAreRefusedClearly(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--start=3000", "--max=2000"}, "--max (2000) must be at least --start (3000)"},
		{[]string{"--step=0"}, "--step must be positive, got 0"},
		{[]string{"--start=0"}, "--start must be positive, got 0"},
		{[]string{"--hold=30s", "--lease-duration=80s"}, "--hold must be at least two renew intervals (40s), got 30s"},
		{[]string{"--mode=status", "--status-update-frequency=2m"}, "--hold must be at least two renew intervals (4m0s), got 2m0s"},
		{[]string{"--max-mutating-p99=0s"}, "--max-mutating-p99 must be positive"},
		{[]string{"--max-false-alarms=-1"}, "--max-false-alarms must not be negative"},
		{[]string{"--register-qps=0"}, "--register-qps must be positive and finite, got 0"},
		{[]string{"--connections=11", "--max=10", "--start=5", "--step=5"}, "--connections 11: more than the fleet's 10 nodes"},
		{[]string{"--max=2000000"}, "more than the largest fleet fakelet runs"},
		{[]string{"--mode=gossip"}, "--mode"},
		{[]string{"--node-monitor-grace-period=-1s"}, "--node-monitor-grace-period must not be negative"},
		{[]string{"--shard=0/5", "--start=5", "--step=1", "--max=8"}, "--step 1: with 5 shards, shard 2/5 would run 2 nodes at the step of 7 and 1 at the step of 8"},
		{[]string{"--shard=0/3", "--start=2"}, "--start 2: shard 0/3: 2 nodes cannot be split into 3 shards"},
		{[]string{"--shard=3/3"}, "--shard: shard \"3/3\": the shard index must be between 0 and 2"},
		{[]string{"--start-at=auto"}, "--start-at applies to a sharded run (--shard i/n)"},
		{[]string{"--verdict-timeout=10s"}, "--verdict-timeout applies to a sharded run"},
		{[]string{"--shard=0/2", "--verdict-timeout=0s"}, "--verdict-timeout must be positive"},
		{[]string{"--shard=0/2", "--start-at=2020-01-01T00:00:00Z"}, "--start-at 2020-01-01T00:00:00Z has passed"},
		{[]string{"--shard=0/2", "--start-at=noon"}, "want an RFC 3339 time"},
		{[]string{"--shard=0/2", "--start-at=2099-01-01T00:00:00Z", "--start-delay=1m"}, "--start-delay applies to --start-at auto"},
		{[]string{"--nodes=10"}, "unknown flag: --nodes"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append([]string{"capacity", "--kubeconfig", missing}, tc.args...))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("fakelet capacity %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
			if strings.Contains(out.String(), "target:") {
				t.Errorf("the run reached a target:\n%s", out.String())
			}
		})
	}
}
