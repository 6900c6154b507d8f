package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// TestForeignObjectsSurviveRunChurnAndCleanup puts Nodes and Leases that are not the fleet's beside
// it, under the fleet's own name prefix: one without any fleet label, one of another fleet (with the
// very name churn adds next), and Leases of both. A run, churn (adding a node onto the other fleet's
// name, adding and removing one of its own, deleting one of its Leases) and `fakelet cleanup` delete
// exactly the fleet's objects and never write to the others.
func TestForeignObjectsSurviveRunChurnAndCleanup(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	ctx := context.Background()
	const prefix = "own"
	unlabelled := foreignNode(t, c, "own-00042", map[string]string{"team": "prod"})
	otherFleet := foreignNode(t, c, "own-00005", map[string]string{fleetname.Label: "other"})
	unownedLease := foreignLease(t, c, "own-00042", "")
	otherNode, err := c.CoreV1().Nodes().Get(ctx, "own-00005", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	otherLease := foreignLease(t, c, "own-00005", string(otherNode.UID))
	untouched := func(stage string) {
		t.Helper()
		t.Logf("checking the foreign objects after %s", stage)
		unlabelled()
		otherFleet()
		unownedLease()
		otherLease()
	}

	rf := runFleet(t, cp.AdminConfig(), fleet.Config{Nodes: 5, Fleet: "own", NamePrefix: prefix, Keep: true, Template: smallNodes})
	rf.waitReady(t, 5, 60*time.Second)
	// A kubelet creates its Lease once its Node exists, at its next sync: up to 10 s later.
	eventually(t, 30*time.Second, "the fleet's 5 leases", func() (bool, error) {
		return leasesNamed(t, c, prefix) == 5+2, nil // and the two foreign ones
	})
	untouched("the run registered")

	// Churn. Node 5's name belongs to the other fleet: its agent must give up, naming it.
	if err := rf.AddNodes([]int{5, 6}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the agent of own-00005 refused", func() (bool, error) {
		for _, err := range rf.Failures() {
			if strings.Contains(err.Error(), "own-00005") {
				return true, nil
			}
		}
		return false, nil
	})
	rf.waitReady(t, 6, 60*time.Second) // own-00006
	if err := rf.RemoveNodes(ctx, []int{5}); !errors.Is(err, fleet.ErrNotOwned) {
		t.Errorf("removing own-00005, which is another fleet's: %v, want ErrNotOwned", err)
	}
	if err := rf.RemoveNodes(ctx, []int{6}); err != nil {
		t.Errorf("removing own-00006: %v", err)
	}
	if err := rf.DeleteLease(ctx, 0); err != nil {
		t.Errorf("deleting own-00000's lease: %v", err)
	}
	eventually(t, 30*time.Second, "own-00000's lease recreated", func() (bool, error) {
		_, err := c.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, "own-00000", metav1.GetOptions{})
		return err == nil, nil
	})
	untouched("churn")
	if err := rf.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(fleetNodes(t, c, "own")); n != 5 {
		t.Fatalf("%d of the fleet's nodes kept, want 5 (--keep)", n)
	}

	// The run has just stopped and released its claim, which the cleanup deletes last; --force skips
	// the watch of the fleet's heartbeats all the same.
	p := startFakelet(t, "cleanup", "--fleet", "own", "--kubeconfig", cp.Kubeconfig, "--force")
	if code := p.wait(time.Minute); code != 0 {
		t.Fatalf("fakelet cleanup: exit code %d", code)
	}
	out := p.stdout.String()
	for _, want := range []string{"deleted node/own-00000", "deleted node/own-00004", "deleted lease/own-00000 -n kube-node-lease",
		"deleted lease/fakelet-claim.own.0-of-1 -n kube-node-lease", "fleet own: deleted 5 nodes and 6 leases"} { // the 6th: the claim
		if !strings.Contains(out, want) {
			t.Errorf("cleanup output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "own-00005") || strings.Contains(out, "own-00042") {
		t.Errorf("cleanup names a foreign object:\n%s", out)
	}
	if n := len(fleetNodes(t, c, "own")); n != 0 {
		t.Errorf("%d of the fleet's nodes left after fakelet cleanup", n)
	}
	untouched("fakelet cleanup")

	again := startFakelet(t, "cleanup", "--fleet", "own", "--kubeconfig", cp.Kubeconfig)
	if code := again.wait(time.Minute); code != 0 || !strings.Contains(again.stdout.String(), "deleted 0 nodes and 0 leases") {
		t.Errorf("a second cleanup: exit code %d, output %q; want nothing deleted", code, again.stdout.String())
	}
}

// foreignLease creates a Lease in kube-node-lease (owned by the Node of ownerUID, if given) and
// returns a check that it is unchanged: nothing but its holder writes a Lease.
func foreignLease(t *testing.T, c kubernetes.Interface, name, ownerUID string) func() {
	t.Helper()
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agent.LeaseNamespace}}
	if ownerUID != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID(ownerUID)}}
	}
	leases := c.CoordinationV1().Leases(agent.LeaseNamespace)
	created, err := leases.Create(context.Background(), l, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leases.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return func() {
		t.Helper()
		now, err := leases.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || now.UID != created.UID || now.ResourceVersion != created.ResourceVersion {
			t.Errorf("foreign lease %s was touched: %v", name, err)
		}
	}
}
