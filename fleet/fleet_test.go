package fleet

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/fleettest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type testFleet struct {
	*Fleet
	client *fake.Clientset
	clock  *testingclock.FakeClock
	cancel context.CancelFunc
	done   chan error
}

// startFleet runs a fleet of cfg on a fake clientset made fleettest.APIServerLike, holding objects,
// on a fake clock.
func startFleet(t *testing.T, cfg Config, objects ...*corev1.Node) *testFleet {
	t.Helper()
	return startFleetWith(t, cfg, nil, objects...)
}

// startFleetWith is startFleet that lets setup add reactors to the clientset before the fleet runs.
func startFleetWith(t *testing.T, cfg Config, setup func(*testFleet), objects ...*corev1.Node) *testFleet {
	t.Helper()
	client := fake.NewClientset()
	fleettest.APIServerLike(client)
	for _, n := range objects {
		if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	fc := testingclock.NewFakeClock(t0)
	tf := &testFleet{client: client, clock: fc, done: make(chan error, 1)}
	if setup != nil {
		setup(tf)
	}
	cfg.Clock = fc
	cfg.Template.Images = 3
	f, err := NewWithClients(fleettest.Resolve(t, cfg), client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tf.Fleet, tf.cancel = f, cancel
	go func() { tf.done <- f.Run(ctx) }()
	t.Cleanup(cancel)
	return tf
}

// stop ends the run and returns Run's error.
func (tf *testFleet) stop() error {
	tf.cancel()
	return <-tf.done
}

func (tf *testFleet) advance(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-tf.Running():
	case err := <-tf.done:
		t.Fatalf("fleet ended before running: %v", err)
	}
	tf.Scheduler().Advance(tf.clock, t0.Add(d))
}

func writes(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func TestAgentsStartAtTheRegisterRate(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 50, RegisterQPS: 10})
	tf.advance(t, 2*time.Second)
	// One at once, then one every 100 ms: 21 by 2 s.
	if got := tf.Progress().Started; got != 21 {
		t.Fatalf("%d agents started in 2 s at 10/s, want 21", got)
	}
	tf.advance(t, 10*time.Second)
	if got := tf.Progress().Started; got != 50 {
		t.Fatalf("%d agents started after 10 s, want all 50", got)
	}
	nodes, err := tf.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 50 {
		t.Fatalf("%d nodes registered (%v), want 50", len(nodes.Items), err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return tf.Progress().Ready == 50, nil }); err != nil {
		t.Errorf("the fleet's watch saw %d Ready nodes, want 50", tf.Progress().Ready)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestCoalescedTimersKeepTheRegisterRate: with a 50 ms timer step, the starter wakes every 50 ms and
// starts what the rate allowed since, not one kubelet per wakeup. The pacer reaches its ceiling of
// 80/s at 3 s (10, 20, 40, 80 a second from the fake server's fast answers).
func TestCoalescedTimersKeepTheRegisterRate(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 240, RegisterQPS: 80, Coalesce: 50 * time.Millisecond})
	tf.advance(t, 3*time.Second)
	before := tf.Progress().Started
	tf.advance(t, 5*time.Second)
	if got := tf.Progress().Started - before; got < 155 || got > 165 {
		t.Fatalf("%d agents started in 2 s at 80/s with 50 ms steps, want about 160", got)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}

func TestShutdownDeletesOnlyWhatTheFleetCreated(t *testing.T) {
	neighbour := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00099", Labels: map[string]string{"team": "prod"}}}
	otherFleet := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00098", Labels: map[string]string{fleetname.Label: "other"}}}
	tf := startFleet(t, Config{Nodes: 5}, neighbour, otherFleet)
	tf.advance(t, 30*time.Second)
	foreignLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00099", Namespace: agent.LeaseNamespace}}
	if _, err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).Create(context.Background(), foreignLease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
	nodes, _ := tf.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	if strings.Join(names, ",") != "fakelet-00098,fakelet-00099" {
		t.Errorf("nodes after shutdown %v, want only the two that were not the fleet's", names)
	}
	leases, _ := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	if len(leases.Items) != 1 || leases.Items[0].Name != "fakelet-00099" {
		t.Errorf("leases after shutdown %v, want only the foreign one", leases.Items)
	}
}

func TestKeepLeavesNodesAndLeases(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 3, Keep: true})
	tf.advance(t, 30*time.Second)
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes(tf.client) {
		if strings.HasPrefix(w, "delete") {
			t.Fatalf("--keep deleted: %v", w)
		}
	}
	if n := leaseCount(t, tf); n != 3 {
		t.Errorf("%d node leases kept, want 3", n)
	}
	// The claim stays, released: the next run adopts the kept nodes at once.
	claim, err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), fleetname.ClaimName(fleetname.DefaultNamePrefix, fleetname.Shard{}), metav1.GetOptions{})
	if err != nil || holder(claim) != "" || stoppedRun(claim) != tf.Config().RunID {
		t.Errorf("claim after a --keep run: %+v, %v; want it released by run %s", claim, err, tf.Config().RunID)
	}
}

func TestForeignNodeWithOurNameStopsTheRunBeforeAnyWrite(t *testing.T) {
	squatter := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00002"}}
	tf := startFleet(t, Config{Nodes: 5}, squatter)
	err := <-tf.done
	if err == nil || !strings.Contains(err.Error(), "fakelet-00002 (no fleet label)") {
		t.Fatalf("run error %v, want one naming fakelet-00002", err)
	}
	if w := writes(tf.client); len(w) != 0 {
		t.Errorf("the refused run wrote %v", w)
	}
}

func TestUnreachableClusterFailsBeforeAnyWrite(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("connection refused")
	})
	f, err := NewWithClients(fleettest.Resolve(t, Config{Nodes: 2, Clock: testingclock.NewFakeClock(t0)}), client,
		[]agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	err = f.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "list nodes") {
		t.Fatalf("run error %v, want the failed node list", err)
	}
	if w := writes(client); len(w) != 0 {
		t.Errorf("wrote %v", w)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: 0}, "nodes must be positive"},
		{Config{Nodes: 1, NamePrefix: "Bad_Prefix"}, "name prefix"},
		{Config{Nodes: 1, Fleet: "no spaces"}, "fleet name"},
		{Config{Nodes: 1, RegisterQPS: -1}, "register QPS"},
		{Config{Nodes: 1, CleanupQPS: -1}, "cleanup QPS"},
		{Config{Nodes: 1, RunID: "Not A Label"}, "run ID"},
		{Config{Nodes: 1, Identity: "root"}, "unknown identity"},
		{Config{Nodes: 1, ConnectionMode: "per-host"}, `unknown connection mode "per-host" (want "shared" or "per-node")`},
		{Config{Nodes: 1, ConnectionMode: ConnectionsPerNode, LegacyWire: true}, "legacy wire path is one of shared connections"},
		{Config{Nodes: 1, Heartbeat: heartbeat.Config{Mode: "gossip"}}, "heartbeat mode"},
		{Config{Nodes: 1, Heartbeat: heartbeat.Config{LeaseDurationSeconds: 40, RenewInterval: time.Minute}}, "shorter than the lease duration"},
	} {
		_, err := tc.cfg.Resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestConfigValidationNamesTheField: a numeric field out of range is a *FieldError naming the field,
// for the CLI to name its flag.
func TestConfigValidationNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg           Config
		field, reason string
	}{
		{Config{Nodes: -5}, "Nodes", "must be positive, got -5"},
		{Config{Nodes: 1, Zones: -1}, "Zones", "must not be negative, got -1"},
		{Config{Nodes: 1, Connections: -2}, "Connections", "must not be negative, got -2"},
		{Config{Nodes: 4, ConnectionMode: ConnectionsPerNode, Connections: 2}, "Connections", "is one per node with per-node connections, got 2 shared ones too"},
		{Config{Nodes: 1, Coalesce: 2 * time.Second}, "Coalesce", "must be between 0 and 1s, got 2s"},
		{Config{Nodes: 1, RegisterQPS: math.NaN()}, "RegisterQPS", "must be positive and finite, got NaN"},
		{Config{Nodes: 1, CleanupQPS: math.Inf(1)}, "CleanupQPS", "must be between 0.1 and 10000 deletions a second, got +Inf"},
		{Config{Nodes: 1, CleanupQPS: 1e-12}, "CleanupQPS", "must be between 0.1 and 10000 deletions a second, got 1e-12"},
		{Config{Nodes: 1, PodsPerNode: 1, PodQPS: -1}, "PodQPS", "must be positive and finite, got -1"},
	} {
		var fe *FieldError
		_, err := tc.cfg.Resolve()
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Problem != tc.reason {
			t.Errorf("%+v: error %#v, want field %s: %s", tc.cfg, err, tc.field, tc.reason)
		}
	}
	var fe *FieldError
	if _, err := (Config{Nodes: 1, RunID: "Not A Label"}).Resolve(); errors.As(err, &fe) {
		t.Errorf("run ID: %v is a field error, want a plain one", err)
	}
}
