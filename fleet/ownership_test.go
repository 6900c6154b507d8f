package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
)

// secondFleet builds another run of cfg on tf's clientset and clock, as a second fakelet process
// against the same cluster would be.
func secondFleet(t *testing.T, tf *testFleet, cfg Config) (*testFleet, context.Context) {
	t.Helper()
	cfg.Clock = tf.clock
	cfg.Template.Images = 3
	f, err := NewWithClients(fleettest.Resolve(t, cfg), tf.client, []agent.Clients{{Core: tf.client.CoreV1(), Coordination: tf.client.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &testFleet{Fleet: f, client: tf.client, clock: tf.clock, cancel: cancel, done: make(chan error, 1)}, ctx
}

// TestASecondRunRefusesTheNodesALiveRunHolds: run A of the default fleet holds its claim and renews
// its Leases; run B with the same names and default flags sees A renew the claim while it watches,
// refuses to start, naming A's run, and writes nothing. Once A has stopped (with --keep, releasing
// its claim), a third run adopts its Nodes at once. Before runs had IDs, B adopted A's live Nodes and
// deleted them at its end.
func TestASecondRunRefusesTheNodesALiveRunHolds(t *testing.T) {
	a := startFleet(t, Config{Nodes: 4, Keep: true})
	a.advance(t, 30*time.Second)
	a.pollAdvancing(t, "A's 4 leases", func() bool { return leaseCount(t, a) == 4 })

	b, bctx := secondFleet(t, a, Config{Nodes: 4})
	a.client.ClearActions()
	go func() { b.done <- b.Run(bctx) }()
	var err error
	a.pollAdvancing(t, "run B's refusal", func() bool {
		select {
		case err = <-b.done:
			return true
		default:
			return false
		}
	})
	var held *ClaimHeldError
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "held by run "+a.Config().RunID) || !held.Renewed {
		t.Fatalf("run B: %v, want a refusal naming run %s, which renewed its claim", err, a.Config().RunID)
	}
	for _, w := range writes(a.client) {
		if !strings.HasPrefix(w, "update leases") { // A's own renewals go on
			t.Errorf("run B wrote %s", w)
		}
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}

	// A stopped, kept its Nodes and released its claim: another run adopts them at once.
	c, cctx := secondFleet(t, a, Config{Nodes: 4})
	go func() { c.done <- c.Run(cctx) }()
	c.pollAdvancing(t, "run C adopted A's 4 nodes and leases", func() bool {
		for _, ag := range c.Agents() {
			if node, lease := ag.Owned(); node == "" || lease == "" {
				return false
			}
		}
		return true
	})
	nodes, _ := a.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	for _, n := range nodes.Items {
		if agent.HeldBy(&n) != c.Config().RunID {
			t.Errorf("node %s held by %q, want run C's %s", n.Name, agent.HeldBy(&n), c.Config().RunID)
		}
	}
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}
	if nodes, _ := a.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); len(nodes.Items) != 0 {
		t.Errorf("%d nodes left after run C, want its 4 adopted ones deleted", len(nodes.Items))
	}
}

// TestCleanupDeletesOnlyTheUIDsTheRunCreated: a Node of the fleet is deleted mid-run and another,
// with the same name and the fleet's label, created by someone else while its agent is stopped. The
// run's cleanup deletes the other Nodes and leaves that one: it is not the one the run created.
func TestCleanupDeletesOnlyTheUIDsTheRunCreated(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 3})
	tf.advance(t, 30*time.Second)
	tf.Agent(1).Stop()
	ctx := context.Background()
	if err := tf.client.CoreV1().Nodes().Delete(ctx, "fakelet-00001", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00001", UID: "someone-elses",
		Labels: map[string]string{fleetname.Label: fleetname.DefaultFleet}}}
	if _, err := tf.client.CoreV1().Nodes().Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
	nodes, _ := tf.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if len(nodes.Items) != 1 || nodes.Items[0].UID != "someone-elses" {
		t.Errorf("nodes after cleanup %v, want only the one someone else created", nodes.Items)
	}
}

func leaseCount(t *testing.T, tf *testFleet) int {
	t.Helper()
	leases, err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range leases.Items {
		if !strings.HasPrefix(l.Name, "fakelet-claim.") { // the run's claim is no node's
			n++
		}
	}
	return n
}
