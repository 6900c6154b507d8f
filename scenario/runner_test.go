package scenario

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/profiles"
)

const rollingProfile = `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: rolling}
spec:
  nodes: 4
  groups:
    all: {indexes: "0-3"}
    two: {indexes: "1-2"}
  phases:
  - name: warmup
    duration: 20s
  - name: rolling
    duration: 40s
    actions:
    - {group: all, do: latency, delay: 1s, at: 5s, spread: 20s}
    - {group: two, do: notReady, at: 30s}
  - name: calm
    duration: 15s
    actions:
    - {group: all, do: latency, delay: 0s}
    - {group: two, do: ready, at: 10s}
`

func TestPhasesAndOpsRunAtTheirTimes(t *testing.T) {
	h := newHarness(t, rollingProfile)
	start := h.waitForPhases()
	at := func(d time.Duration) time.Time { return start.Add(d) }

	// The nodes were Ready about a second after they started, but their kubelets create their Leases
	// only one renew interval later (the first try finds no Node to own them): the phases wait for them.
	for i, a := range h.fleet.Agents() {
		if l := a.Stats().LastLeaseRenewal; l.IsZero() || l.After(start) {
			t.Errorf("node %d first renewed its lease at %v, after the phases began at %v", i, l, start)
		}
	}
	h.advanceTo(start, 24999*time.Millisecond)
	if n := len(h.runner.Record().Applied); n != 0 {
		t.Fatalf("%d ops applied before the first one's time (25 s)", n)
	}
	h.advanceTo(start, 75*time.Second)
	h.finished()
	rec := h.runner.Record()

	wantPhases := []PhaseRecord{
		{Name: "warmup", Start: at(0), End: at(20 * time.Second)},
		{Name: "rolling", Start: at(20 * time.Second), End: at(60 * time.Second)},
		{Name: "calm", Start: at(60 * time.Second), End: at(75 * time.Second)},
	}
	if len(rec.Phases) != len(wantPhases) {
		t.Fatalf("phases %+v, want %+v", rec.Phases, wantPhases)
	}
	for i, p := range rec.Phases {
		w := wantPhases[i]
		if p.Name != w.Name || !p.Start.Equal(w.Start) || !p.End.Equal(w.End) {
			t.Errorf("phase %d ran %s %v-%v, want %s %v-%v", i, p.Name, p.Start.Sub(start), p.End.Sub(start), w.Name, w.Start.Sub(start), w.End.Sub(start))
		}
	}
	type want struct {
		at   time.Duration
		node int
		op   profiles.Op
	}
	wantOps := []want{
		{25 * time.Second, 0, profiles.OpLatency}, {30 * time.Second, 1, profiles.OpLatency},
		{35 * time.Second, 2, profiles.OpLatency}, {40 * time.Second, 3, profiles.OpLatency},
		{50 * time.Second, 1, profiles.OpNotReady}, {50 * time.Second, 2, profiles.OpNotReady},
		{60 * time.Second, 0, profiles.OpLatency}, {60 * time.Second, 1, profiles.OpLatency},
		{60 * time.Second, 2, profiles.OpLatency}, {60 * time.Second, 3, profiles.OpLatency},
		{70 * time.Second, 1, profiles.OpReady}, {70 * time.Second, 2, profiles.OpReady},
	}
	if len(rec.Applied) != len(wantOps) {
		t.Fatalf("applied %+v, want %d ops", rec.Applied, len(wantOps))
	}
	for i, a := range rec.Applied {
		w := wantOps[i]
		if !a.At.Equal(at(w.at)) || a.Node != w.node || a.Op != w.op || a.Err != "" {
			t.Errorf("op %d: %s on node %d at +%v (err %q), want %s on node %d at +%v", i, a.Op, a.Node, a.At.Sub(start), a.Err, w.op, w.node, w.at)
		}
	}
	if !rec.Start.Equal(start) || rec.Nodes != 4 || rec.Ready != 4 || rec.ReadyTimedOut || rec.CutShort {
		t.Errorf("record header %+v", rec)
	}

	// One line per phase and per action as it starts, never one per node.
	wantLog := []string{
		"+0s     phase 1/3 warmup begins: 20s, no actions",
		"+20s    phase 1/3 warmup ends: no ops applied",
		"+20s    phase 2/3 rolling begins: 40s, 2 actions",
		"+25s      rolling: latency group all (4 nodes) delay 1s spread over 20s",
		"+50s      rolling: notReady group two (2 nodes) reason KubeletNotReady message \"container runtime is down\"",
		"+1m0s   phase 2/3 rolling ends: 6 ops applied",
		"+1m0s   phase 3/3 calm begins: 15s, 2 actions",
		"+1m0s     calm: latency group all (4 nodes) delay 0s",
		"+1m10s    calm: ready group two (2 nodes)",
		"+1m15s  phase 3/3 calm ends: 6 ops applied",
		"+1m15s  profile rolling: the last phase ended",
	}
	if got := h.log.timedLines(); strings.Join(got, "\n") != strings.Join(wantLog, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantLog, "\n"))
	}
	if !strings.HasPrefix(h.log.String(), "profile rolling: waiting for 4 nodes to be Ready before the first phase") ||
		!strings.Contains(h.log.String(), "profile rolling: 4 of 4 nodes Ready, with their Leases, after") {
		t.Errorf("log does not say how it waited for Ready nodes:\n%s", h.log)
	}
}

func TestChurnAddsAndRemovesNodes(t *testing.T) {
	h := newHarness(t, `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: churn}
spec:
  nodes: 4
  zones: 2
  groups:
    leaving: {indexes: "0-1"}
  phases:
  - name: steady
    duration: 10s
  - name: up
    duration: 30s
    actions:
    - {do: churn, add: 2, rate: 1}
  - name: down
    duration: 30s
    actions:
    - {group: leaving, do: churn, remove: 2, rate: 1}
`)
	start := h.waitForPhases()
	h.advanceTo(start, 40*time.Second)
	rec := h.runner.Record()
	adds := applied(rec, profiles.OpAdd)
	for k, node := range []int{4, 5} {
		if a := adds[node]; a.Err != "" || !a.At.Equal(start.Add(10*time.Second+time.Duration(k)*time.Second)) {
			t.Errorf("add of node %d recorded as %+v", node, a)
		}
		name := fleetname.NodeName("fakelet", node)
		n := h.node(name)
		if z, want := n.Labels[corev1.LabelTopologyZone], profiles.ZoneOf(node, 2); z != want {
			t.Errorf("added node %s in zone %q, want %q", name, z, want)
		}
		if c := condition(n, corev1.NodeReady); c.Status != corev1.ConditionTrue {
			t.Errorf("added node %s Ready %s", name, c.Status)
		}
		if _, err := h.lease(name); err != nil {
			t.Errorf("added node %s has no lease: %v", name, err)
		}
	}

	h.advanceTo(start, 50*time.Second)
	rec = h.runner.Record()
	removes := applied(rec, profiles.OpRemove)
	for k, node := range []int{0, 1} {
		if a := removes[node]; a.Err != "" || !a.At.Equal(start.Add(40*time.Second+time.Duration(k)*time.Second)) {
			t.Errorf("remove of node %d recorded as %+v", node, a)
		}
		name := fleetname.NodeName("fakelet", node)
		if _, err := h.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("removed node %s: %v, want not found", name, err)
		}
		if _, err := h.lease(name); !apierrors.IsNotFound(err) {
			t.Errorf("removed node %s's lease: %v, want not found", name, err)
		}
		if h.fleet.Agent(node) != nil {
			t.Errorf("the fleet still has an agent for removed node %s", name)
		}
	}
	if p := h.fleet.Progress(); p.Nodes != 6 || p.Added != 2 || p.Removed != 2 {
		t.Errorf("fleet progress %+v, want 6 nodes, 2 added, 2 removed", p)
	}
	h.advanceTo(start, 70*time.Second)
	h.finished()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	nodes, _ := h.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if len(nodes.Items) != 0 {
		t.Errorf("%d nodes left after the fleet's cleanup, added ones included: want none", len(nodes.Items))
	}
}

func TestRunCutShortEndsWhereItIs(t *testing.T) {
	h := newHarness(t, rollingProfile)
	start := h.waitForPhases()
	h.advanceTo(start, 30*time.Second)
	h.cancel()
	if err := <-h.runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("run cut short returned %v, want context.Canceled", err)
	}
	h.runErr <- nil
	rec := h.runner.Record()
	if !rec.CutShort || len(rec.Phases) != 2 || !rec.Phases[1].End.Equal(start.Add(30*time.Second)) {
		t.Errorf("record of a run cut short at +30s: %+v", rec)
	}
}

func TestPhasesBeginAfterTheReadyTimeout(t *testing.T) {
	failNode0 := func(_ *fleet.Config, rc *Config, client *fake.Clientset) {
		rc.ReadyTimeout = 20 * time.Second
		client.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.(k8stesting.CreateAction).GetObject().(*corev1.Node).Name == "fakelet-00000" {
				return true, nil, apierrors.NewInternalError(errors.New("etcd is sulking"))
			}
			return false, nil, nil
		})
	}
	h := newHarness(t, `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: short}
spec:
  nodes: 3
  phases:
  - {name: only, duration: 10s}
`, failNode0)
	<-h.fleet.Running()
	h.fleet.Scheduler().Advance(h.clock, t0.Add(5*time.Second))
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return h.fleet.Progress().Ready >= 2, nil }); err != nil {
		t.Fatal("nodes 1 and 2 not Ready")
	}
	start := h.stepUntilStarted(time.Minute)
	if waited := start.Sub(t0); waited < 20*time.Second || waited > 22*time.Second {
		t.Errorf("phases began %v after the run did, want after the 20 s ready timeout", waited)
	}
	rec := h.runner.Record()
	if !rec.ReadyTimedOut || rec.Ready != 2 {
		t.Errorf("record says ready %d, timed out %v; want 2 and true", rec.Ready, rec.ReadyTimedOut)
	}
	if !strings.Contains(h.log.String(), "only 2 of 3 nodes Ready (1 in lease mode without a Lease) after 2") || !strings.Contains(h.log.String(), "the phases begin anyway") {
		t.Errorf("log does not say the wait timed out:\n%s", h.log)
	}
}

func TestNewRefusesWhatItCannotRun(t *testing.T) {
	load := func(body string) *profiles.Plan {
		return resolvePlan(t, "apiVersion: fakelet.dev/v1alpha1\nkind: Profile\nmetadata: {name: x}\n"+body)
	}
	client := fake.NewClientset()
	fleetOf := func(cfg fleet.Config) *fleet.Fleet {
		f, err := fleet.NewWithClients(fleettest.Resolve(t, cfg), client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		name, profile string
		fleet         fleet.Config
		want          string
	}{
		{"pods", "spec: {nodes: 2, podsPerNode: 3, phases: [{name: a, duration: 1s}]}", fleet.Config{Nodes: 2, Zones: 1},
			"profile x has 3 pod(s) per node (toleration default), and the fleet runs 0 (toleration default)"},
		{"toleration", "spec: {nodes: 2, podsPerNode: 3, podTolerationSeconds: 5, phases: [{name: a, duration: 1s}]}",
			fleet.Config{Nodes: 2, Zones: 1, PodsPerNode: 3},
			"profile x has 3 pod(s) per node (toleration 5s), and the fleet runs 3 (toleration default)"},
		{"size", "spec: {nodes: 2, phases: [{name: a, duration: 1s}]}", fleet.Config{Nodes: 3, Zones: 1},
			"resolved for 2 nodes, and the fleet has 3"},
		{"zones", "spec: {nodes: 2, zones: 2, phases: [{name: a, duration: 1s}]}", fleet.Config{Nodes: 2, Zones: 1},
			"has 2 zone(s), and the fleet labels 1"},
		{"identity", "spec: {nodes: 2, groups: {g: {count: 1}}, phases: [{name: a, duration: 1s, actions: [{group: g, do: denyAuth}]}]}",
			fleet.Config{Nodes: 2, Zones: 1, Identity: fleet.IdentityFleet}, "it needs identity \"node\""},
	} {
		_, err := New(Config{Plan: load(tc.profile), Fleet: fleetOf(tc.fleet)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
