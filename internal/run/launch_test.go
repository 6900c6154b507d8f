package run

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/fleettest"
)

func fakeFleet(t *testing.T, nodes ...*corev1.Node) (*fleet.Fleet, *fake.Clientset) {
	t.Helper()
	var objects []runtime.Object
	for _, n := range nodes {
		objects = append(objects, n)
	}
	client := fake.NewClientset(objects...)
	fleettest.APIServerLike(client)
	f, err := fleet.NewWithClients(fleettest.Resolve(t, fleet.Config{Nodes: 3}), client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	return f, client
}

// TestLaunchRefusesBeforeTheFleetWrites: a Node with one of the fleet's names that is not the
// fleet's fails Launch at the preflight, before the fleet writes anything, and the fleet never runs.
func TestLaunchRefusesBeforeTheFleetWrites(t *testing.T) {
	f, client := fakeFleet(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00001"}})
	done, err := Launch(t.Context(), f, nil)
	if err == nil || !strings.Contains(err.Error(), "fakelet-00001") || done != nil {
		t.Fatalf("Launch over a foreign node: %v (done %v), want the node named and no run", err, done)
	}
	for _, a := range client.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			t.Errorf("the refused launch sent %s %s", v, a.GetResource().Resource)
		}
	}
	select {
	case <-f.Running():
		t.Error("the refused fleet runs")
	default:
	}
}

// TestLaunchRunsTheFleetUntilItsContextEnds: the fleet runs in the background, and done says how
// it ended once it deleted the Nodes it registered, after its context ended.
func TestLaunchRunsTheFleetUntilItsContextEnds(t *testing.T) {
	f, client := fakeFleet(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done, err := Launch(ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	select { // a bound on a failure; the wait is on the event
	case <-f.Running():
	case err := <-done:
		t.Fatalf("the fleet ended before it ran: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the fleet does not run 30 s after Launch")
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return f.Progress().Registered == 3, nil
	}); err != nil {
		t.Fatalf("%d of 3 nodes registered: %v", f.Progress().Registered, err)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the fleet ended with %v", err)
	}
	if nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); len(nodes.Items) != 0 {
		t.Errorf("%d Nodes left once done, want the fleet's cleanup done", len(nodes.Items))
	}
}
