package fleet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// The heartbeat footprint's store hands each pod to its node's agent and keeps none: a new list is
// each agent's whole set of pods, so one deleted while the watch was down is found gone, and a pod
// of a node the fleet does not have goes nowhere.
func TestDispatchStoreHandsPodsToTheirAgents(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 2, Footprint: agent.FootprintHeartbeat})
	s := &dispatchStore{agent: tf.liveAgent, all: tf.Agents}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}}}
	}
	n0, n1 := fleetname.NodeName(fleetname.DefaultNamePrefix, 0), fleetname.NodeName(fleetname.DefaultNamePrefix, 1)
	_ = s.Add(pod("a", n0))
	_ = s.Add(pod("b", n1))
	_ = s.Add(pod("c", "elsewhere"))
	known := func(i int) int { n, _ := tf.Agent(i).Pods(); return n }
	if known(0) != 1 || known(1) != 1 {
		t.Fatalf("pods known %d and %d, want 1 each", known(0), known(1))
	}
	if err := s.Replace([]any{pod("b", n1)}, "5"); err != nil {
		t.Fatal(err)
	}
	if known(0) != 0 || known(1) != 1 || !s.synced.Load() {
		t.Errorf("after a list of b alone: %d and %d pods known, want 0 and 1", known(0), known(1))
	}
	_ = s.Delete(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: pod("b", n1)})
	if known(1) != 0 || len(s.List()) != 0 {
		t.Errorf("after b's deletion: %d pods known, want 0", known(1))
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}
