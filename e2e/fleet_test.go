package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
)

// runningFleet is a fleet running in the background of a test, stopped (and cleaned up) at its end.
type runningFleet struct {
	*fleet.Fleet
	cancel context.CancelFunc
	done   chan error
}

// startFleet runs a fleet against the package's shared control plane (see runFleetOn).
func startFleet(t *testing.T, cfg fleet.Config) *runningFleet {
	t.Helper()
	return runFleetOn(t, controlPlane(t), cfg)
}

func (rf *runningFleet) stop() error {
	if rf.done == nil {
		return nil
	}
	rf.cancel()
	err := <-rf.done
	rf.done = nil
	return err
}

// eventually polls cond every 200 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}

func fleetNodes(t *testing.T, c kubernetes.Interface, fleetName string) []corev1.Node {
	t.Helper()
	list, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: agent.FleetLabel + "=" + fleetName})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func readyCondition(n *corev1.Node) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}
