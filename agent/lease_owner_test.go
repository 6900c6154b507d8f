package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/fleetname"
)

func leaseOwnedBy(name string, uid types.UID) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name)},
	}
}

func writesTo(calls []call, resource string) []string {
	var out []string
	for _, c := range calls {
		if c.res == resource && c.verb != "get" && c.verb != "list" && c.verb != "watch" {
			out = append(out, c.String())
		}
	}
	return out
}

// TestAnotherFleetsLeaseIsNeverRenewed: a Node and Lease with the agent's name that belong to another
// fleet. A kubelet would renew the Lease at once, since it does not look at its owner; the agent
// checks the owner, finds another fleet's Node, gives up and writes nothing.
func TestAnotherFleetsLeaseIsNeverRenewed(t *testing.T) {
	const name = "fakelet-00000"
	h := newHarness(t)
	theirs := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "their-uid", Labels: map[string]string{fleetname.Label: "other"}}}
	seed(t, h.client, theirs, leaseOwnedBy(name, "their-uid"))
	h.take()
	var failed error
	h.cfg.OnFatal = func(_ *Agent, err error) { failed = err }
	a := h.agent(name, 0)
	a.Start(h.ctx)
	h.advance(time.Minute)
	calls := h.take()
	if w := append(writesTo(calls, "leases"), writesTo(calls, "nodes")...); len(w) > 0 {
		t.Errorf("the agent wrote to another fleet's objects: %v", w)
	}
	var foreign *ForeignNodeError
	if !errors.As(failed, &foreign) || !errors.As(a.Err(), &foreign) {
		t.Errorf("agent error %v, want a ForeignNodeError", a.Err())
	}
}

// TestLeaseOfAnEarlierNodeIsLeftToTheGarbageCollector: our Node was deleted and registered again, and
// the Lease still names the old Node's UID. The agent does not renew it; once the garbage collector
// (here, the test) deletes it, the agent creates its own.
func TestLeaseOfAnEarlierNodeIsLeftToTheGarbageCollector(t *testing.T) {
	const name = "fakelet-00000"
	h := newHarness(t)
	ours := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "new-uid", Labels: map[string]string{fleetname.Label: "test"}}}
	seed(t, h.client, ours, leaseOwnedBy(name, "old-uid"))
	h.take()
	a := h.agent(name, 0)
	a.ObserveNode(ours.DeepCopy())
	a.Start(h.ctx)
	h.advance(30 * time.Second)
	if w := writesTo(h.take(), "leases"); len(w) > 0 {
		t.Fatalf("the agent wrote to a lease another node owns: %v", w)
	}
	if err := h.client.CoordinationV1().Leases(LeaseNamespace).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.take()
	h.advance(time.Minute)
	if w := strings.Join(writesTo(h.take(), "leases"), "; "); !strings.Contains(w, "create leases") {
		t.Fatalf("after the stale lease was deleted the agent wrote %q, want it to create its own", w)
	}
	l, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkLease(t, l, "new-uid")
	if a.Err() != nil {
		t.Errorf("the agent gave up: %v", a.Err())
	}
}

// TestLeaseWithoutOwnerIsNeverAdopted: a Lease with the agent's name and no owner, beside the
// agent's own Node. A kubelet would renew it and set itself as its owner; fakelet creates every Lease
// owned by its Node, so this one is someone else's and the agent never writes to it.
func TestLeaseWithoutOwnerIsNeverAdopted(t *testing.T) {
	const name = "fakelet-00000"
	h := newHarness(t)
	unowned := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace, UID: "their-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone")}}
	ours := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "our-uid", Labels: map[string]string{fleetname.Label: "test"}}}
	seed(t, h.client, ours, unowned)
	h.take()
	a := h.agent(name, 0)
	a.Start(h.ctx)
	h.advance(time.Minute)
	if w := writesTo(h.take(), "leases"); len(w) > 0 {
		t.Errorf("the agent wrote to a lease without an owner: %v", w)
	}
	l, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || len(l.OwnerReferences) != 0 || *l.Spec.HolderIdentity != "someone" {
		t.Errorf("the unowned lease changed: %+v, %v", l, err)
	}
	if _, lease := a.Owned(); lease != "" {
		t.Errorf("the agent counts lease uid %s as its own, want none", lease)
	}
}

// TestRunAnnotationOnCreatedAndAdoptedObjects: the Node and Lease an agent creates carry its run's
// ID; a Node and Lease an earlier run of the fleet left are adopted and re-annotated with it, and the
// agent reports their UIDs as its own.
func TestRunAnnotationOnCreatedAndAdoptedObjects(t *testing.T) {
	withRun := func(c *Config) {
		tmpl, err := NewTemplate(TemplateOptions{Fleet: "test", RunID: "run-b"})
		if err != nil {
			panic(err)
		}
		c.Template = tmpl
	}
	h := newHarness(t, withRun)
	left := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00001", UID: "left-node",
		Labels: map[string]string{fleetname.Label: "test"}, Annotations: map[string]string{fleetname.RunAnnotation: "run-a"}}}
	leftLease := leaseOwnedBy("fakelet-00001", "left-node")
	leftLease.UID, leftLease.Annotations = "left-lease", map[string]string{fleetname.RunAnnotation: "run-a"}
	seed(t, h.client, left, leftLease)
	fresh, adopted := h.agent("fakelet-00000", 0), h.agent("fakelet-00001", 1)
	fresh.Start(h.ctx)
	adopted.Start(h.ctx)
	h.advance(30 * time.Second)
	for _, a := range []*Agent{fresh, adopted} {
		n, err := h.client.CoreV1().Nodes().Get(context.Background(), a.Name(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(context.Background(), a.Name(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if HeldBy(n) != "run-b" || HeldBy(l) != "run-b" {
			t.Errorf("%s: node held by %q, lease by %q, want run-b", a.Name(), HeldBy(n), HeldBy(l))
		}
		if node, lease := a.Owned(); node != n.UID || lease != l.UID {
			t.Errorf("%s: owns node %q and lease %q, want %q and %q", a.Name(), node, lease, n.UID, l.UID)
		}
	}
	if node, lease := adopted.Owned(); node != "left-node" || lease != "left-lease" {
		t.Errorf("adopted %q and %q, want the left node and lease", node, lease)
	}
}

// TestNodeOfAnotherLiveRunIsLeftAlone: the fleet's Node and its Lease, held by run A. An agent of run
// B with that name (a Node churn added, or a run that started after B's check) neither adopts the Node
// nor renews the Lease, and gives up naming run A, unless its fleet knows run A to have stopped
// (Config.Adoptable): whatever the Lease's renew time says on B's clock, which may be ahead of A's.
// Before, B judged by its own clock: a Lease renewed 41 s ago by it was adopted, though A's clock
// could be a minute behind and A alive.
func TestNodeOfAnotherLiveRunIsLeftAlone(t *testing.T) {
	const name = "fakelet-00000"
	for _, tc := range []struct {
		renewed time.Duration // before the agent starts
		stopped bool          // the fleet knows run A stopped
	}{{5 * time.Second, false}, {41 * time.Second, false}, {5 * time.Second, true}} {
		var asked []string
		h := newHarness(t, func(c *Config) {
			tmpl, err := NewTemplate(TemplateOptions{Fleet: "test", RunID: "run-b"})
			if err != nil {
				panic(err)
			}
			c.Template = tmpl
			c.Adoptable = func(node, run string, renewed time.Time) bool {
				asked = append(asked, fmt.Sprintf("%s %s %v", node, run, t0.Sub(renewed)))
				return tc.stopped
			}
		})
		theirs := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "their-node",
			Labels: map[string]string{fleetname.Label: "test"}, Annotations: map[string]string{fleetname.RunAnnotation: "run-a"}}}
		lease := leaseOwnedBy(name, "their-node")
		lease.Annotations = map[string]string{fleetname.RunAnnotation: "run-a"}
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](40)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(-tc.renewed)}
		seed(t, h.client, theirs, lease)
		h.take()
		a := h.agent(name, 0)
		a.Start(h.ctx)
		h.advance(30 * time.Second)
		calls := h.take()
		w := append(writesTo(calls, "leases"), writesTo(calls, "nodes")...)
		if want := fmt.Sprintf("%s run-a %v", name, tc.renewed); !slices.Contains(asked, want) {
			t.Errorf("renewed %v ago: the fleet was asked %q, want %q among them", tc.renewed, asked, want)
		}
		var held *HeldError
		if !tc.stopped {
			if len(w) > 0 {
				t.Errorf("renewed %v ago: the agent wrote to run A's objects: %v", tc.renewed, w)
			}
			if !errors.As(a.Err(), &held) || held.Run != "run-a" {
				t.Errorf("renewed %v ago: agent error %v, want a HeldError naming run-a", tc.renewed, a.Err())
			}
			if node, lease := a.Owned(); node != "" || lease != "" {
				t.Errorf("renewed %v ago: the agent that gave up owns %q and %q, want nothing", tc.renewed, node, lease)
			}
			continue
		}
		if node, lease := a.Owned(); node != "their-node" || lease == "" || a.Err() != nil {
			t.Errorf("renewed %v ago: owns %q and %q (%v), want the stopped run's node and lease adopted", tc.renewed, node, lease, a.Err())
		}
	}
}

// TestAnAgentThatLosesItsNodeGivesItUp: an agent adopts the Node and Lease of a stopped run, and then
// another run (which adopted them at the same time) renews the Lease: the agent's next renewal
// conflicts, it reads the Lease, finds it held by the other run and gives up, and owns nothing any
// more, so that its fleet's cleanup does not delete the other run's Node. Before, fail() kept the
// UIDs: the agent still owned "their-node" and its Lease, and its fleet deleted them at the end.
func TestAnAgentThatLosesItsNodeGivesItUp(t *testing.T) {
	const name = "fakelet-00000"
	h := newHarness(t, func(c *Config) {
		tmpl, err := NewTemplate(TemplateOptions{Fleet: "test", RunID: "run-b"})
		if err != nil {
			panic(err)
		}
		c.Template = tmpl
		c.Adoptable = func(_, run string, _ time.Time) bool { return run == "run-a" }
	})
	theirs := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "their-node",
		Labels: map[string]string{fleetname.Label: "test"}, Annotations: map[string]string{fleetname.RunAnnotation: "run-a"}}}
	lease := leaseOwnedBy(name, "their-node")
	lease.Annotations = map[string]string{fleetname.RunAnnotation: "run-a"}
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](40)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(-time.Minute)}
	seed(t, h.client, theirs, lease)
	a := h.agent(name, 0)
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	if node, lease := a.Owned(); node != "their-node" || lease == "" {
		t.Fatalf("owns %q and %q (%v), want the stopped run's node and lease adopted", node, lease, a.Err())
	}

	// Run C renews the Lease it adopted too; B's next PUT, from its last copy, conflicts.
	got, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Annotations = map[string]string{fleetname.RunAnnotation: "run-c"}
	got.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(5 * time.Second)}
	if _, err := h.client.CoordinationV1().Leases(LeaseNamespace).Update(h.ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.failNext("update", "leases", 1, apierrors.NewConflict(coordinationv1.Resource("leases"), name, errors.New("the object has been modified")))
	h.advance(20 * time.Second)
	var held *HeldError
	if !errors.As(a.Err(), &held) || held.Run != "run-c" {
		t.Fatalf("agent error %v, want a HeldError naming run-c", a.Err())
	}
	if node, lease := a.Owned(); node != "" || lease != "" {
		t.Errorf("the agent that gave up owns node %q and lease %q, want nothing: its fleet would delete run C's", node, lease)
	}
}

// TestObjectsCreatedAsTheRunEndsAreOwned: a kubelet stopped while the answer to the creation of its
// Node or Lease is on its way has created it all the same, and the agent owns it, for the fleet's
// cleanup to delete. Before, the call failed with the run's context and the agent owned nothing: a
// fleet stopped as soon as its nodes were Ready once left a Node behind (e2e
// TestDeployRBACImpersonatesOnlyTheFleet, with the kubelet footprint's busier start).
func TestObjectsCreatedAsTheRunEndsAreOwned(t *testing.T) {
	for _, tc := range []struct{ resource, namespace string }{{"nodes", ""}, {"leases", LeaseNamespace}} {
		t.Run(tc.resource, func(t *testing.T) {
			h := newHarness(t)
			a := h.agent("fakelet-00000", 0)
			h.client.PrependReactor("create", tc.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				a.Stop() // the answer comes back to a stopped kubelet
				return false, nil, nil
			})
			a.Start(h.ctx)
			h.advance(15 * time.Second) // the Lease waits for the Node, until the next tick
			gvr := corev1.SchemeGroupVersion.WithResource("nodes")
			if tc.resource == "leases" {
				gvr = coordinationv1.SchemeGroupVersion.WithResource("leases")
			}
			created, err := h.client.Tracker().Get(gvr, tc.namespace, "fakelet-00000")
			if err != nil {
				t.Fatal(err)
			}
			uid := created.(metav1.Object).GetUID()
			node, lease := a.Owned()
			if owned := map[string]types.UID{"nodes": node, "leases": lease}[tc.resource]; owned != uid {
				t.Errorf("the agent owns %s %q, want the one it created, %q", tc.resource, owned, uid)
			}
		})
	}
}
