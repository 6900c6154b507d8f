package main

import (
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/internal/lockstep"
	"fakelet.dev/fakelet/profiles"
)

// prepareShard prepares `fakelet run` as RunE does, in a pod named hostname.
func prepareShard(t *testing.T, hostname string, args ...string) (fleet.Config, *profiles.Plan, *runFlags, error) {
	t.Helper()
	rf := &runFlags{}
	rf.shard.hostname = hostname
	rf.shard.clock = testingclock.NewFakePassiveClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cmd := newRunCommandFor(rf)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	cfg, plan, err := rf.prepare(cmd.Flags())
	return cfg.Config(), plan, rf, err
}

// TestShardRunsItsSliceOfTheFleet: --nodes is the whole fleet's size; each shard runs its slice, with
// connections for its own nodes, and the shards' names are disjoint and cover the fleet.
func TestShardRunsItsSliceOfTheFleet(t *testing.T) {
	t.Setenv(fleetname.ShardEnv, "")
	seen := map[string]int{}
	for i := range 3 {
		cfg, _, _, err := prepareShard(t, "", "--nodes", "2500", "--shard", shardArg(i, 3))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Connections != 1 {
			t.Errorf("shard %d/3 of 2500 nodes (%d) uses %d connections, want 1", i, cfg.Nodes, cfg.Connections)
		}
		for index := cfg.FirstIndex; index < cfg.FirstIndex+cfg.Nodes; index++ {
			seen[fleetname.NodeName(cfg.NamePrefix, index)]++
		}
	}
	if len(seen) != 2500 {
		t.Errorf("the shards run %d distinct nodes, want 2500", len(seen))
	}
	for index := range 2500 {
		if n := seen[fleetname.NodeName(fleetname.DefaultNamePrefix, index)]; n != 1 {
			t.Fatalf("node %d is run by %d shards", index, n)
		}
	}
}

// TestShardFromThePodOrdinal: auto/n, in --shard or $FAKELET_SHARD, reads the StatefulSet pod ordinal.
func TestShardFromThePodOrdinal(t *testing.T) {
	t.Setenv(fleetname.ShardEnv, "auto/4")
	cfg, _, rf, err := prepareShard(t, "fakelet-2", "--nodes", "100")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.FirstIndex != 50 || cfg.Nodes != 25 || rf.shard.parsed != (fleetname.Shard{Index: 2, Count: 4}) {
		t.Errorf("pod fakelet-2 with auto/4 runs %d nodes from %d as shard %v; want 25 from 50 as 2/4", cfg.Nodes, cfg.FirstIndex, rf.shard.parsed)
	}
	cfg, _, _, err = prepareShard(t, "fakelet-2", "--nodes", "100", "--shard", "0/2") // the flag wins
	if err != nil || cfg.FirstIndex != 0 || cfg.Nodes != 50 {
		t.Errorf("--shard 0/2 over $%s: %d nodes from %d, %v", fleetname.ShardEnv, cfg.Nodes, cfg.FirstIndex, err)
	}
}

// TestShardGroupsDoNotDependOnTheShardCount: a profile's groups are chosen over the whole fleet, so
// every shard count resolves the same groups, and each member is owned by exactly one shard.
func TestShardGroupsDoNotDependOnTheShardCount(t *testing.T) {
	t.Setenv(fleetname.ShardEnv, "")
	_, whole, _, err := prepareShard(t, "", "--profile", "mass-outage")
	if err != nil {
		t.Fatal(err)
	}
	for _, count := range []int{1, 2, 3, 7, 16} {
		owners := map[int]int{}
		for i := range count {
			cfg, plan, rf, err := prepareShard(t, "", "--profile", "mass-outage", "--shard", shardArg(i, count))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plan.Groups, whole.Groups) || plan.Nodes != whole.Nodes {
				t.Fatalf("shard %d/%d resolves other groups than the whole fleet", i, count)
			}
			if sc := rf.shard.options(); sc.Shard != (fleetname.Shard{Index: i, Count: count}) {
				t.Fatalf("shard %d/%d: the runner gets shard %v", i, count, sc.Shard)
			}
			for index := range whole.Nodes {
				if rf.shard.parsed.Owns(index, whole.Nodes) {
					owners[index]++
					if index < cfg.FirstIndex || index >= cfg.FirstIndex+cfg.Nodes {
						t.Fatalf("shard %d/%d owns node %d outside its slice", i, count, index)
					}
				}
			}
		}
		for _, members := range whole.Groups {
			for _, index := range members {
				if owners[index] != 1 {
					t.Fatalf("%d shards: group member %d has %d owners", count, index, owners[index])
				}
			}
		}
	}
}

func shardArg(i, n int) string { return strconv.Itoa(i) + "/" + strconv.Itoa(n) }

func TestStartAt(t *testing.T) {
	t.Setenv(fleetname.ShardEnv, "")
	_, _, rf, err := prepareShard(t, "", "--profile", "steady", "--shard", "1/2", "--start-at", "2026-03-01T12:05:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if sc := rf.shard.options(); !sc.StartAt.Equal(time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC)) {
		t.Errorf("the runner starts at %v", sc.StartAt)
	}
}

// TestStartAtAuto: --start-at auto takes the start from the start Lease, which the first shard writes
// --start-delay ahead (by default, twice its registration time plus a minute), and the second joins.
func TestStartAtAuto(t *testing.T) {
	t.Setenv(fleetname.ShardEnv, "")
	client := fake.NewClientset()
	fleettest.APIServerLike(client)
	fleettest.GrantAll(client)
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var starts []time.Time
	for i, delay := range []string{"", "--start-delay=5m"} { // the joiner's own delay does not matter
		args := []string{"--profile", "steady", "--shard", shardArg(i, 2), "--start-at", "auto", "--coordination-namespace", "runs"}
		if delay != "" {
			args = append(args, delay)
		}
		cfg, _, rf, err := prepareShard(t, "fakelet-"+strconv.Itoa(i), args...)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && rf.shard.startDelay != 70*time.Second {
			t.Errorf("default --start-delay for 500 nodes at 100/s is %v, want 2 x 5s + 1m", rf.shard.startDelay)
		}
		var log strings.Builder
		so := rf.shard.options()
		start, err := so.Join(t.Context(), client, clk, cfg.Fleet, &log)
		if err != nil {
			t.Fatal(err)
		}
		if !so.StartAt.Equal(start.At) {
			t.Errorf("shard %d: the runner starts at %v, the Lease says %v", i, so.StartAt, start.At)
		}
		starts = append(starts, start.At)
		clk.SetTime(clk.Now().Add(10 * time.Second))
	}
	if want := time.Date(2026, 3, 1, 12, 1, 10, 0, time.UTC); !starts[0].Equal(want) || !starts[1].Equal(want) {
		t.Errorf("the shards start at %v, want both at %v", starts, want)
	}
	l, err := client.CoordinationV1().Leases("runs").Get(t.Context(), lockstep.LeaseName("fakelet"), metav1.GetOptions{})
	if err != nil || *l.Spec.HolderIdentity != "fakelet-0 shard 0/2" {
		t.Errorf("start Lease %+v, %v; want one held by fakelet-0 shard 0/2", l, err)
	}

	// A shard of another run (here another seed) is refused.
	cfg, _, rf, err := prepareShard(t, "fakelet-1", "--profile", "steady", "--seed", "9", "--shard", "1/2", "--start-at", "auto",
		"--coordination-namespace", "runs")
	if err != nil {
		t.Fatal(err)
	}
	so := rf.shard.options()
	if _, err := so.Join(t.Context(), client, clk, cfg.Fleet, io.Discard); err == nil || !strings.Contains(err.Error(), "is for another run") {
		t.Errorf("a shard with another seed: %v, want it refused", err)
	}
}

// TestStatefulSetArgsPrepare: deploy/kubernetes's StatefulSet runs `fakelet run` with flags it accepts:
// its pod fakelet-0, with the StatefulSet's environment, prepares a run in lockstep (--start-at auto)
// that waits for SIGTERM when it is over (--after-run=wait).
func TestStatefulSetArgsPrepare(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/base/statefulset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sts appsv1.StatefulSet
	if err := utilyaml.Unmarshal(b, &sts); err != nil {
		t.Fatal(err)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		t.Setenv(e.Name, e.Value)
	}
	if c.Args[0] != "run" {
		t.Fatalf("the StatefulSet runs %q, want fakelet run", c.Args)
	}
	_, plan, rf, err := prepareShard(t, "fakelet-0", c.Args[1:]...)
	if err != nil {
		t.Fatalf("fakelet %s: %v", strings.Join(c.Args, " "), err)
	}
	if plan == nil || !rf.shard.auto || !rf.target.inCluster || rf.afterRun != afterRunWait {
		t.Errorf("fakelet %s: profile %v, --start-at auto %v, --in-cluster %v, --after-run %s; want all four, and wait",
			strings.Join(c.Args, " "), plan != nil, rf.shard.auto, rf.target.inCluster, rf.afterRun)
	}
}

func TestInvalidShardFlagsAreRefusedClearly(t *testing.T) {
	t.Setenv(fleetname.ShardEnv, "")
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{args: []string{"--shard", "3/3"}, want: "--shard: shard \"3/3\": the shard index must be between 0 and 2"},
		{args: []string{"--shard", "auto/3"}, want: "does not end in -<ordinal>"},
		{args: []string{"--shard", "0/0"}, want: "the shard count must be a positive integer"},
		{args: []string{"--nodes", "4", "--shard", "0/5"}, want: "4 nodes cannot be split into 5 shards"},
		{env: "1", want: "$FAKELET_SHARD: shard \"1\": want i/n or auto/n"},
		{args: []string{"--start-at", "2026-03-01T12:05:00Z"}, want: "--start-at applies to a profile"},
		{args: []string{"--profile", "steady", "--start-at", "noon"}, want: "want an RFC 3339 time"},
		{args: []string{"--profile", "steady", "--start-at", "2026-03-01T11:59:00Z"}, want: "has passed"},
		{args: []string{"--profile", "steady", "--start-at", "2026-03-01T12:05:00Z", "--ready-timeout", "1m"}, want: "give one"},
		{args: []string{"--profile", "steady", "--start-at", "auto", "--ready-timeout", "1m"}, want: "give one"},
		{args: []string{"--start-at", "auto"}, want: "--start-at applies to a profile"},
		{args: []string{"--profile", "steady", "--start-delay", "1m"}, want: "--start-delay applies to --start-at auto"},
		{args: []string{"--profile", "steady", "--start-at", "2026-03-01T12:05:00Z", "--coordination-namespace", "x"},
			want: "--coordination-namespace applies to --start-at auto"},
		{args: []string{"--profile", "steady", "--start-at", "auto", "--start-delay", "-1s"}, want: "--start-delay must not be negative"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv(fleetname.ShardEnv, tc.env)
			_, _, _, err := prepareShard(t, "fakelet", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestInCluster: --in-cluster uses the pod's ServiceAccount, refuses a kubeconfig besides it, and
// outside a pod fails saying so rather than fall back to a local control plane.
func TestInCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	for _, tc := range []struct {
		f    targetFlags
		want string
	}{
		{targetFlags{inCluster: true, kubeconfig: "x"}, "without --kubeconfig and --context"},
		{targetFlags{inCluster: true, context: "kind"}, "without --kubeconfig and --context"},
		{targetFlags{inCluster: true, controlPlaneDir: t.TempDir()}, "--in-cluster: unable to load in-cluster configuration"},
	} {
		if _, err := resolveTarget(t.Context(), tc.f, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.f, err, tc.want)
		}
	}
}
