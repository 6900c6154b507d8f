package fleet

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/fleetname"
)

// namespacesLeft adds to c the namespaces a --keep run of fleet blue left, and others that are not
// its to delete, and returns their names.
func namespacesLeft(t *testing.T, c *fake.Clientset) []string {
	t.Helper()
	for _, ns := range []corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-blue-run-a", UID: "ns-a", Labels: map[string]string{fleetname.Label: "blue", RunLabel: "run-a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-green-run-b", UID: "ns-b", Labels: map[string]string{fleetname.Label: "green", RunLabel: "run-b"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "blue-team", UID: "ns-c", Labels: map[string]string{fleetname.Label: "blue"}}}, // no run: not a run's
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "ns-d"}},
		{ObjectMeta: metav1.ObjectMeta{Name: fleetname.PodNamespace, UID: "ns-pods", Labels: map[string]string{fleetname.Label: "blue"}}}, // the fleet created it
	} {
		if _, err := c.CoreV1().Namespaces().Create(context.Background(), &ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.ClearActions()
	return []string{"blue-team", "fakelet-blue-run-a", "fakelet-green-run-b", fleetname.PodNamespace, "kube-system"}
}

func namespaceNames(t *testing.T, c *fake.Clientset) []string {
	t.Helper()
	list, err := c.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	slices.Sort(out)
	return out
}

// TestCleanupDeletesTheRunsWorkloadNamespaces: fakelet cleanup deletes the namespace of workloads a
// --keep or crashed run of the fleet left (labelled with the fleet and a run), on the UID it listed,
// and the pods' namespace the fleet created once its pods are gone; not another fleet's namespace,
// nor one with the fleet's label and no run's, nor any other. Before, it deleted no namespace: a
// crashed run's workloads ran on in theirs, and the pods' namespace stayed.
func TestCleanupDeletesTheRunsWorkloadNamespaces(t *testing.T) {
	c := leftFleet(2, t0.Add(-time.Hour))
	all := namespacesLeft(t, c)
	// Forced: which namespaces go is the question here, not whether a run is live (the next test).
	d, err := DeleteFleetAndNamespaces(context.Background(), c, CleanupOptions{Fleet: "blue", Clock: testingclock.NewFakeClock(t0), Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Namespaces, []string{"fakelet-blue-run-a"}) {
		t.Errorf("deleted namespaces %v, want the run's fakelet-blue-run-a", d.Namespaces)
	}
	if got, want := namespaceNames(t, c), []string{"blue-team", "fakelet-green-run-b", "kube-system"}; !slices.Equal(got, want) {
		t.Errorf("namespaces left %v, want %v (of %v)", got, want, all)
	}
	for _, a := range c.Actions() {
		del, ok := a.(k8stesting.DeleteAction)
		if !ok || a.GetResource().Resource != "namespaces" {
			continue
		}
		uid := map[string]types.UID{"fakelet-blue-run-a": "ns-a", fleetname.PodNamespace: "ns-pods"}[del.GetName()]
		if p := del.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || *p.UID != uid {
			t.Errorf("delete namespace %s with preconditions %+v, want its UID %s", del.GetName(), p, uid)
		}
	}
}

// TestCleanupLeavesALiveRunsNamespace: a run that renews its Leases while the cleanup watches keeps its namespace as it
// keeps its Nodes (nothing is deleted without --force), and --dry-run lists the namespace and
// deletes nothing.
func TestCleanupLeavesALiveRunsNamespace(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	c := leftFleet(2, t0.Add(-10*time.Second))
	all := namespacesLeft(t, c)
	ctx := context.Background()
	var live *LiveRunError
	renewing(t, c) // the run renews its Leases while the cleanup watches them
	err := stepping(clk, func() error {
		_, err := DeleteFleetAndNamespaces(ctx, c, CleanupOptions{Fleet: "blue", Clock: clk})
		return err
	})
	if !errors.As(err, &live) {
		t.Fatalf("cleanup of a live run: %v, want a LiveRunError", err)
	}
	if got := namespaceNames(t, c); !slices.Equal(got, all) {
		t.Errorf("the refused cleanup left namespaces %v, want %v", got, all)
	}
	d, err := DeleteFleetAndNamespaces(ctx, c, CleanupOptions{Fleet: "blue", Clock: clk, Force: true, DryRun: true})
	if err != nil || !slices.Equal(d.Namespaces, []string{"fakelet-blue-run-a"}) {
		t.Errorf("dry run: namespaces %v, %v; want fakelet-blue-run-a listed", d.Namespaces, err)
	}
	if got := namespaceNames(t, c); !slices.Equal(got, all) {
		t.Errorf("the dry run left namespaces %v, want %v", got, all)
	}
}

// TestCleanupWithoutNamespaceGrants: a credential that may not list namespaces (a fleet deployed
// without workloads.yaml, whose runs could create none) cleans the rest and deletes no namespace.
func TestCleanupWithoutNamespaceGrants(t *testing.T) {
	c := leftFleet(2, t0.Add(-time.Hour))
	all := namespacesLeft(t, c)
	c.PrependReactor("*", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "", errors.New("RBAC: not granted"))
	})
	d, err := DeleteFleetAndNamespaces(context.Background(), c, CleanupOptions{Fleet: "blue", Clock: testingclock.NewFakeClock(t0), Force: true})
	if err != nil || len(d.Nodes) != 2 || len(d.Namespaces) != 0 {
		t.Fatalf("cleanup: %+v, %v; want its 2 nodes deleted, no namespace and no error", d, err)
	}
	c.ReactionChain = c.ReactionChain[1:]
	if got := namespaceNames(t, c); !slices.Equal(got, all) || !strings.Contains(strings.Join(got, ","), fleetname.PodNamespace) {
		t.Errorf("namespaces left %v, want %v", got, all)
	}
}
