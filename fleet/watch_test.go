package fleet

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/internal/conditions"
	"fakelet.dev/fakelet/internal/fleettest"
)

// The fleet's Node watch keeps no Node: per node, its counts and the conditions' statuses and taints
// its handlers compare the next change with, the conditions shared by the Nodes that have the same.
func TestTheNodeWatchKeepsNoNode(t *testing.T) {
	tf := startFleetWith(t, Config{Nodes: 3, RegisterQPS: 10}, func(tf *testFleet) { fleettest.ResourceVersions(tf.client) })
	tf.advance(t, time.Second)
	poll(t, "3 Ready nodes", func() bool { return tf.Progress().Ready == 3 })

	tf.nodes.mu.Lock()
	shared := map[*[]corev1.NodeCondition]bool{}
	for _, s := range tf.nodes.seen {
		shared[s.conds] = true
	}
	seen := len(tf.nodes.seen)
	tf.nodes.mu.Unlock()
	if seen != 3 || len(shared) != 1 {
		t.Errorf("the watch keeps %d nodes with %d sets of conditions, want 3 sharing one", seen, len(shared))
	}

	var mu sync.Mutex
	var old, now *corev1.Node
	name := tf.Agent(0).Name()
	tf.OnNode(func(o, n *corev1.Node) {
		if n.Name == name {
			mu.Lock()
			old, now = o, n
			mu.Unlock()
		}
	})
	// What the node lifecycle controller does to a node that stopped reporting.
	n, err := tf.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = corev1.ConditionUnknown
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule})
	if _, err := tf.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the handler's call for the unreachable node", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return now != nil && !conditions.NodeReady(now)
	})
	mu.Lock()
	defer mu.Unlock()
	if old == nil || old.Name != name || !conditions.NodeReady(old) || len(old.Spec.Taints) != 0 {
		t.Errorf("the handler was given %+v as the Node before, want %s Ready without taints", old, name)
	}
	if tf.Progress().Ready != 2 || tf.Progress().Schedulable != 2 {
		t.Errorf("progress %+v after a node went unreachable, want 2 Ready and schedulable", tf.Progress())
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}
