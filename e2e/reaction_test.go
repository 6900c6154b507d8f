package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/fleet"
)

const unreachable = "node.kubernetes.io/unreachable"

// TestNodeLifecycleControllerReactsToAStoppedKubelet: the real controller marks a silent node
// Unknown and taints it unreachable; when the kubelet comes back it is Ready and untainted again.
func TestNodeLifecycleControllerReactsToAStoppedKubelet(t *testing.T) {
	rf := startFleet(t, fleet.Config{Nodes: 5, Fleet: "react", NamePrefix: "react", RegisterQPS: 50})
	c := admin(t, controlPlane(t))
	node := func() *corev1.Node {
		n, err := c.CoreV1().Nodes().Get(context.Background(), "react-00002", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	eventually(t, 60*time.Second, "5 Ready nodes without taints", func() (bool, error) {
		if rf.Progress().Ready != 5 {
			return false, nil
		}
		return len(node().Spec.Taints) == 0, nil // the not-ready taint of registration is gone
	})

	victim := rf.Agent(2)
	victim.Stop()
	stopped := time.Now()
	eventually(t, gracePeriod+30*time.Second, "Ready Unknown and the unreachable NoSchedule taint", func() (bool, error) {
		n := node()
		return readyCondition(n).Status == corev1.ConditionUnknown && hasTaint(n, unreachable, corev1.TaintEffectNoSchedule), nil
	})
	took := time.Since(stopped)
	if took < gracePeriod-time.Second {
		t.Errorf("node marked Unknown %v after its kubelet stopped, before the %v grace period", took, gracePeriod)
	}
	if r := readyCondition(node()); r.Reason != "NodeStatusUnknown" || r.Message != "Kubelet stopped posting node status." {
		t.Errorf("Ready condition %+v, want the controller's NodeStatusUnknown", r)
	}
	for i := range 5 {
		if i == 2 {
			continue
		}
		n, err := c.CoreV1().Nodes().Get(context.Background(), rf.Agent(i).Name(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if readyCondition(n).Status != corev1.ConditionTrue {
			t.Errorf("%s is %s while its kubelet runs", n.Name, readyCondition(n).Status)
		}
	}

	victim.Start(context.Background())
	eventually(t, 30*time.Second, "Ready again and untainted", func() (bool, error) {
		n := node()
		return readyCondition(n).Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0, nil
	})
}
