package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

func (tf *testFleet) lease(t *testing.T, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease %s: %v", name, err)
	}
	return l
}

func TestAddNodesContinuesTheNumberingAndIsCleanedUp(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 3, Zones: 2})
	tf.advance(t, 30*time.Second)
	if err := tf.AddNodes([]int{4}); err == nil {
		t.Error("adding node 4 to a fleet of 3 (next is 3) succeeded")
	}
	if err := tf.AddNodes([]int{3, 4}); err != nil {
		t.Fatal(err)
	}
	tf.advance(t, 60*time.Second)
	for _, name := range []string{"fakelet-00003", "fakelet-00004"} {
		n, err := tf.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("added node %s not registered: %v", name, err)
		}
		if n.Labels[fleetname.Label] != "fakelet" {
			t.Errorf("added node %s labels %v", name, n.Labels)
		}
		tf.lease(t, name)
	}
	if z := tf.Agent(4); z == nil || !z.Running() {
		t.Fatal("node 4 has no running agent")
	}
	if n, _ := tf.client.CoreV1().Nodes().Get(context.Background(), "fakelet-00004", metav1.GetOptions{}); n.Labels[corev1.LabelTopologyZone] != "zone-1" {
		t.Errorf("node 4 in zone %q, want zone-1 (round-robin over 2 zones)", n.Labels[corev1.LabelTopologyZone])
	}
	if p := tf.Progress(); p.Nodes != 5 || p.Added != 2 || p.Started != 5 {
		t.Errorf("progress %+v, want 5 nodes, 2 added, 5 started", p)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
	nodes, _ := tf.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	leases, _ := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	if len(nodes.Items)+len(leases.Items) != 0 {
		t.Errorf("%d nodes and %d leases left after shutdown, want none", len(nodes.Items), len(leases.Items))
	}
	if err := tf.AddNodes([]int{5}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("adding to a stopped fleet: %v, want ErrNotRunning", err)
	}
}

// TestStopNodeStopsTheKubeletAndLeavesItsNode: a stopped node's kubelet renews nothing more, its Node
// and Lease stay for the node lifecycle controller to find stale, and StartNode starts it again.
func TestStopNodeStopsTheKubeletAndLeavesItsNode(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 2})
	tf.advance(t, 30*time.Second)
	if err := tf.StopNode(1); err != nil {
		t.Fatal(err)
	}
	if tf.Agent(1).Running() || !tf.Agent(0).Running() {
		t.Fatalf("after StopNode(1): node 0 runs %v, node 1 runs %v; want only node 0", tf.Agent(0).Running(), tf.Agent(1).Running())
	}
	before := tf.lease(t, "fakelet-00001")
	tf.advance(t, 3*time.Minute)
	if after := tf.lease(t, "fakelet-00001"); !after.Spec.RenewTime.Equal(before.Spec.RenewTime) {
		t.Errorf("the stopped node's Lease was renewed at %v, after %v", after.Spec.RenewTime, before.Spec.RenewTime)
	}
	if _, err := tf.client.CoreV1().Nodes().Get(context.Background(), "fakelet-00001", metav1.GetOptions{}); err != nil {
		t.Errorf("the stopped node's Node: %v, want it left", err)
	}
	if err := tf.StartNode(1); err != nil || !tf.Agent(1).Running() {
		t.Errorf("StartNode after StopNode: %v, running %v", err, tf.Agent(1).Running())
	}
	if err := tf.StopNode(2); !errors.Is(err, errNoSuchNode) || err.Error() != "stop node fakelet-00002: not in the fleet" {
		t.Errorf("stopping a node not in the fleet: %v", err)
	}
}

func TestRemoveNodesStopsTheAgentAndDeletesNodeAndLease(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 3})
	tf.advance(t, 30*time.Second)
	a := tf.Agent(1)
	if err := tf.RemoveNodes(context.Background(), []int{1}); err != nil {
		t.Fatal(err)
	}
	if a.Running() {
		t.Error("the removed node's agent still runs")
	}
	if tf.Agent(1) != nil {
		t.Error("Agent(1) still returns the removed agent")
	}
	if err := tf.StartNode(1); err == nil {
		t.Error("a removed node was started again")
	}
	tf.client.ClearActions()
	tf.advance(t, 3*time.Minute)
	if _, err := tf.client.CoreV1().Nodes().Get(context.Background(), "fakelet-00001", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("removed node: %v, want not found", err)
	}
	if _, err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), "fakelet-00001", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("removed node's lease: %v, want not found", err)
	}
	for _, w := range writes(tf.client) {
		if w == "create nodes" || w == "create leases" {
			t.Errorf("after removal the fleet wrote %s", w)
		}
	}
	if p := tf.Progress(); p.Removed != 1 {
		t.Errorf("progress %+v, want 1 removed", p)
	}
	if err := tf.RemoveNodes(context.Background(), []int{1}); err == nil {
		t.Error("removing a node twice succeeded")
	}
}

func TestDeleteLeaseOnlyDeletesALeaseOurNodeOwns(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 2})
	tf.advance(t, 30*time.Second)
	old := tf.lease(t, "fakelet-00000")
	if err := tf.DeleteLease(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), "fakelet-00000", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("lease after DeleteLease: %v, want not found", err)
	}
	// The agent recreates it at its next sync: a new lease, owned by the same Node.
	tf.advance(t, 55*time.Second)
	fresh := tf.lease(t, "fakelet-00000")
	if fresh.UID == old.UID || fresh.OwnerReferences[0].UID != old.OwnerReferences[0].UID {
		t.Errorf("recreated lease uid %s owner %v; old uid %s owner %v", fresh.UID, fresh.OwnerReferences, old.UID, old.OwnerReferences)
	}

	// Someone else's lease under node 1's name (owned by another Node uid) is never deleted.
	tf.Agent(1).Stop()
	leases := tf.client.CoordinationV1().Leases(agent.LeaseNamespace)
	if err := leases.Delete(context.Background(), "fakelet-00001", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	foreign := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name: "fakelet-00001", Namespace: agent.LeaseNamespace,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "fakelet-00001", UID: "someone-else"}},
	}}
	if _, err := leases.Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tf.client.ClearActions()
	if err := tf.DeleteLease(context.Background(), 1); !errors.Is(err, ErrNotOwned) {
		t.Errorf("deleting a lease our node does not own: %v, want ErrNotOwned", err)
	}
	for _, w := range writes(tf.client) {
		t.Errorf("the refused DeleteLease wrote %s", w)
	}
	tf.lease(t, "fakelet-00001")
}

// TestChurnLeavesANodeReplacedMidRun: node 1's Node and Lease are deleted mid-run and recreated by
// run B of the same fleet, with its label and annotation and a Lease its new Node owns. A churn
// removal of node 1, and an admin's DeleteLease of it, leave both alone: they are not the ones the
// agent created. Before, churn got the Node by name, checked its fleet label only, and deleted it
// and its Lease by their new UIDs.
func TestChurnLeavesANodeReplacedMidRun(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 3})
	tf.advance(t, 30*time.Second)
	ctx := context.Background()
	tf.Agent(1).Stop()
	name := "fakelet-00001"
	if err := tf.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "run-b-node",
		Labels: map[string]string{fleetname.Label: fleetname.DefaultFleet}, Annotations: map[string]string{fleetname.RunAnnotation: "run-b"}}}
	if _, err := tf.client.CoreV1().Nodes().Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agent.LeaseNamespace, UID: "run-b-lease",
		Annotations:     map[string]string{fleetname.RunAnnotation: "run-b"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: "run-b-node"}}}}
	if _, err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tf.DeleteLease(ctx, 1); !errors.Is(err, ErrNotOwned) {
		t.Errorf("DeleteLease of run B's Lease: %v, want ErrNotOwned", err)
	}
	if err := tf.RemoveNodes(ctx, []int{1}); !errors.Is(err, ErrNotOwned) {
		t.Errorf("removing node 1, now run B's: %v, want ErrNotOwned", err)
	}
	if n, err := tf.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil || n.UID != "run-b-node" {
		t.Errorf("run B's Node after the churn removal: %v, want it kept", err)
	}
	if l, err := tf.client.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, name, metav1.GetOptions{}); err != nil || l.UID != "run-b-lease" {
		t.Errorf("run B's Lease after the churn removal: %v, want it kept", err)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
	if n, err := tf.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil || n.UID != "run-b-node" {
		t.Errorf("run B's Node after the run's cleanup: %v, want it kept", err)
	}
}
