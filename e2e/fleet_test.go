package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
)

// runningFleet is a fleet running in the background of a test, stopped (and cleaned up) at its end
// or by stop.
type runningFleet struct {
	*fleet.Fleet
	cancel context.CancelFunc
	done   chan error
}

// startFleet runs a fleet against the package's shared control plane (see runFleet).
func startFleet(t *testing.T, cfg fleet.Config) *runningFleet {
	t.Helper()
	return runFleet(t, controlPlane(t).AdminConfig(), cfg)
}

// runFleet runs a fleet with restConfig's credential in the background until the test ends, or
// until stop; the test fails if the fleet does not start (a refused credential) or if its run, or
// the cleanup at its end, fails.
func runFleet(t *testing.T, restConfig *rest.Config, cfg fleet.Config) *runningFleet {
	t.Helper()
	f, err := fleet.New(fleettest.Resolve(t, cfg), restConfig)
	if err != nil {
		t.Fatal(err)
	}
	return runInBackground(t, f)
}

// runInBackground is runFleet for a fleet the test has built, to observe it before it runs.
func runInBackground(t *testing.T, f *fleet.Fleet) *runningFleet {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rf := &runningFleet{Fleet: f, cancel: cancel, done: make(chan error, 1)}
	go func() { rf.done <- f.Run(ctx) }()
	t.Cleanup(func() {
		if err := rf.stop(); err != nil {
			t.Errorf("fleet run: %v", err)
		}
	})
	select {
	case <-f.Running():
	case err := <-rf.done:
		rf.done = nil
		t.Fatalf("fleet did not start: %v", err)
	}
	return rf
}

// waitReady waits until n of the fleet's nodes are Ready, as the fleet's watch sees them.
func (rf *runningFleet) waitReady(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%d Ready nodes", n), func() (bool, error) { return rf.Progress().Ready == n, nil })
}

// stop ends the fleet's run, which deletes what it created, and returns Run's error.
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
	list, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: fleetname.Label + "=" + fleetName})
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
