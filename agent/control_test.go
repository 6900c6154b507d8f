package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStoppedAgentSendsNothing(t *testing.T) {
	h := newHarness(t)
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(30 * time.Second)
	a.Stop()
	h.take()
	h.advance(10 * time.Minute)
	if calls := h.take(); len(calls) != 0 {
		t.Fatalf("a stopped kubelet sent %d requests: %v", len(calls), calls)
	}
	if a.Running() {
		t.Error("Running() after Stop")
	}
}

// TestForgetDropsTheNodeAndPods: a removed node's agent keeps its statistics and UIDs, not its Node
// and pods. Before Forget, a churn's removed agents kept both for the rest of the run.
func TestForgetDropsTheNodeAndPods(t *testing.T) {
	h := newHarness(t)
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(30 * time.Second)
	a.ObservePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u", ResourceVersion: "1"}})
	a.Stop()
	if a.serverNode() == nil {
		t.Fatal("the agent kept no Node to forget")
	}
	node, lease := a.Owned()
	renewals := a.Stats().LeaseRenewals
	a.Forget()
	if a.serverNode() != nil {
		t.Error("the Node is kept after Forget")
	}
	if known, _ := a.Pods(); known != 0 {
		t.Errorf("%d pods kept after Forget", known)
	}
	if n, l := a.Owned(); n != node || l != lease || a.Stats().LeaseRenewals != renewals {
		t.Errorf("after Forget: owned %s %s, %d renewals; want %s %s, %d", n, l, a.Stats().LeaseRenewals, node, lease, renewals)
	}
}

func TestRestartPatchesReadyAtOnce(t *testing.T) {
	h := newHarness(t)
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(30 * time.Second)
	a.Stop()

	// The node lifecycle controller marks the silent node Unknown; the fleet's watch tells the agent.
	n := h.node("fakelet-00000").DeepCopy()
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = corev1.ConditionUnknown
		n.Status.Conditions[i].Reason = "NodeStatusUnknown"
	}
	n, err := h.client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.ObserveNode(n)
	h.advance(2 * time.Minute)
	h.take()

	a.Start(h.ctx)
	h.advance(2*time.Minute + 200*time.Millisecond)
	calls := h.take()
	var sequence []string
	for _, c := range calls {
		if c.at > 2*time.Minute+100*time.Millisecond {
			break
		}
		sequence = append(sequence, c.verb+" "+c.res)
	}
	// The restarted kubelet registers (the Node exists: GET it), finds Unknown and patches at once;
	// its new lease controller GETs the Lease and renews it.
	want := "get leases; update leases; create nodes; get nodes; patch nodes/status"
	if got := strings.Join(sequence, "; "); got != want {
		t.Fatalf("restart sent %q, want %q", got, want)
	}
	ready := conditions.Node(h.node("fakelet-00000").Status.Conditions, corev1.NodeReady)
	if ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" {
		t.Errorf("Ready after restart: %+v, want True", ready)
	}
}

func TestForeignNodeIsRefusedAndUntouched(t *testing.T) {
	h := newHarness(t)
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00000", Labels: map[string]string{"team": "prod"}}}
	if _, err := h.client.CoreV1().Nodes().Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var fatal error
	h.cfg.OnFatal = func(_ *Agent, err error) { fatal = err }
	h.take()
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(5 * time.Minute)

	var ferr *ForeignNodeError
	if !errors.As(a.Err(), &ferr) || !errors.As(fatal, &ferr) || !strings.Contains(ferr.Error(), "fakelet-00000") {
		t.Fatalf("agent error %v (reported %v), want a ForeignNodeError naming the node", a.Err(), fatal)
	}
	for _, c := range h.take() {
		if c.verb != "get" && !(c.verb == "create" && c.res == "nodes") {
			t.Errorf("agent wrote to the cluster: %v", c)
		}
	}
	if got := h.node("fakelet-00000"); got.Labels["team"] != "prod" || len(got.Status.Conditions) != 0 {
		t.Errorf("foreign node changed: %+v", got)
	}
	if a.Running() {
		t.Error("agent still runs after refusing a foreign node")
	}
}

func TestPartitionedRequestsHangUntilTheClientTimeout(t *testing.T) {
	t.Run("on a worker", func(t *testing.T) { testPartitionedRequestsHangUntilTheClientTimeout(t, false) })
	t.Run("inline", func(t *testing.T) { testPartitionedRequestsHangUntilTheClientTimeout(t, true) })
}

func testPartitionedRequestsHangUntilTheClientTimeout(t *testing.T, inline bool) {
	h := newHarness(t)
	if inline {
		h.renewInline()
	}
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(time.Minute)
	h.take()
	before := a.Stats()
	a.SetPartitioned(true)
	h.advance(3 * time.Minute) // two minutes of partition
	if calls := h.take(); len(calls) != 0 {
		t.Fatalf("a partitioned node reached the apiserver: %v", calls)
	}
	after := a.Stats()
	if after.LeaseRenewals != before.LeaseRenewals {
		t.Errorf("lease renewed while partitioned")
	}
	// The sync due at 61.2 s tries five PUTs, each failing after the 10 s client timeout, then falls
	// back to GETs with backoff: they fail at 121.2, 131.4, 141.8, 152.6, 164.2 and 177.4 s.
	if fails := after.RequestErrors - before.RequestErrors; fails != 11 {
		t.Errorf("%d failed requests in 2 minutes of partition, want 5 PUTs and 6 GETs", fails)
	}
	a.SetPartitioned(false)
	h.advance(4 * time.Minute)
	if a.Stats().LeaseRenewals == after.LeaseRenewals {
		t.Error("lease not renewed after the partition healed")
	}
}

func TestLatencyDelaysEachRequest(t *testing.T) {
	h := newHarness(t)
	a := h.agent("fakelet-00000", 0)
	a.SetLatency(2 * time.Second)
	a.Start(h.ctx)
	h.advance(time.Minute)
	calls := h.take()
	// The first lease sync sends GET lease at 2 s and GET node at 4 s; registration POSTs at
	// 0.1 + 2 s and patches at 4.1 s.
	if len(calls) < 4 || calls[0].at != 2*time.Second || calls[0].res != "leases" {
		t.Fatalf("first requests %v, want the lease GET delayed to 2 s", calls[:min(4, len(calls))])
	}
	var post call
	for _, c := range calls {
		if c.verb == "create" && c.res == "nodes" {
			post = c
			break
		}
	}
	if post.at != 2100*time.Millisecond {
		t.Errorf("node POST at %v, want 2.1 s", post.at)
	}
}

func TestModeSwitchStartsAndStopsTheLease(t *testing.T) {
	t.Run("on a worker", func(t *testing.T) { testModeSwitchStartsAndStopsTheLease(t, false) })
	t.Run("inline", func(t *testing.T) { testModeSwitchStartsAndStopsTheLease(t, true) })
}

func testModeSwitchStartsAndStopsTheLease(t *testing.T, inline bool) {
	h := newHarness(t, func(c *Config) { c.Heartbeat.Mode = heartbeat.ModeStatus })
	if inline {
		h.renewInline()
	}
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(time.Minute)
	h.take()
	a.SetMode(heartbeat.ModeLease)
	h.advance(2 * time.Minute)
	// The lease controller starts at once: GET (404), the Node for the owner, POST; then a PUT every
	// 10.2 s. The status was reported at 50.9 s and is unchanged: no patch for 5 minutes.
	want := "get leases; get nodes; create leases; update leases; update leases; update leases; update leases; update leases"
	if got := summary(h.take()); got != want {
		t.Fatalf("after switching to lease mode: %s\nwant %s", got, want)
	}
	a.SetMode(heartbeat.ModeStatus)
	h.advance(4 * time.Minute)
	calls := h.take()
	for _, c := range calls {
		if c.res == "leases" {
			t.Fatalf("lease request %v after switching back to status mode", c)
		}
	}
	// Status syncs continue at 0.1 + k*10.2 s; from 2 to 4 minutes, 12 of them, each a patch.
	if p := len(patchesOf(calls)); p != 12 {
		t.Errorf("%d status patches in 2 minutes of status mode, want 12", p)
	}
}

func TestRevokedCredentialDropsTheNodesGroup(t *testing.T) {
	h := newHarness(t)
	a := h.agent("fakelet-00003", 3)
	ctx := context.WithValue(context.Background(), identityKey{}, a)
	user, groups, ok := IdentityFrom(ctx)
	if !ok || user != "system:node:fakelet-00003" || len(groups) != 1 || groups[0] != NodesGroup {
		t.Fatalf("identity %q %v %v, want system:node:fakelet-00003 in system:nodes", user, groups, ok)
	}
	a.SetAuthDenied(true)
	if _, groups, _ := IdentityFrom(ctx); len(groups) != 0 {
		t.Errorf("revoked identity keeps groups %v", groups)
	}
	if _, _, ok := IdentityFrom(context.Background()); ok {
		t.Error("a request without an agent has an identity")
	}
}
