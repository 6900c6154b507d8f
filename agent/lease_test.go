package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/fleetname"
)

var leasesGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func TestLeaseConflictGetsAndRetries(t *testing.T) {
	t.Run("on a worker", func(t *testing.T) { testLeaseConflictGetsAndRetries(t, false) })
	t.Run("inline", func(t *testing.T) { testLeaseConflictGetsAndRetries(t, true) })
}

func testLeaseConflictGetsAndRetries(t *testing.T, inline bool) {
	h := newHarness(t)
	if inline {
		h.renewInline()
	}
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(15 * time.Second)
	h.take()
	h.failNext("update", "leases", 1, apierrors.NewConflict(leasesGR, "fakelet-00000", fmt.Errorf("the object has been modified")))
	h.advance(21 * time.Second)
	if got, want := summary(h.take()), "update leases; get leases; update leases"; got != want {
		t.Fatalf("on a conflict the agent sent %q, want %q", got, want)
	}
}

func TestDeletedLeaseIsRecreated(t *testing.T) {
	t.Run("on a worker", func(t *testing.T) { testDeletedLeaseIsRecreated(t, false) })
	t.Run("inline", func(t *testing.T) { testDeletedLeaseIsRecreated(t, true) })
}

func testDeletedLeaseIsRecreated(t *testing.T, inline bool) {
	h := newHarness(t)
	if inline {
		h.renewInline()
	}
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(15 * time.Second)
	leases := h.client.CoordinationV1().Leases(LeaseNamespace)
	h.take()
	if err := leases.Delete(context.Background(), "fakelet-00000", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.take()
	h.advance(21 * time.Second)
	// The PUT of the deleted lease fails (not found) and is retried at once, five times in all, as
	// upstream; then the controller ensures the lease: GET 404, the Node's UID for the owner, POST.
	want := strings.Repeat("update leases; ", 5) + "get leases; get nodes; create leases"
	if got := summary(h.take()); got != want {
		t.Fatalf("after the lease was deleted the agent sent %q, want %q", got, want)
	}
	l, err := leases.Get(context.Background(), "fakelet-00000", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease not recreated: %v", err)
	}
	checkLease(t, l, h.node("fakelet-00000").UID)
}

// TestLeaseLoopMatchesUpstreamController runs the kubelet's own lease controller and an agent's lease
// loop from the same starting points and requires the same requests from both, so that the agent's
// reimplementation cannot drift from component-helpers.
func TestLeaseLoopMatchesUpstreamController(t *testing.T) {
	const name = "fakelet-00000"
	ours := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "node-uid", Labels: map[string]string{fleetname.Label: "test"}}}
	owned := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: "node-uid"}}
	leaseOwnedBy := func(owners []metav1.OwnerReference) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace, OwnerReferences: owners},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name)},
		}
	}
	conflict := apierrors.NewConflict(leasesGR, name, fmt.Errorf("modified"))
	for _, tc := range []struct {
		name      string
		lease     *coordinationv1.Lease
		conflicts int
	}{
		{"no lease yet", nil, 0},
		// A lease without an owner is where the two differ on purpose: the kubelet takes it over, the
		// agent leaves it alone (TestLeaseWithoutOwnerIsNeverAdopted).
		{"owned lease", leaseOwnedBy(owned), 0},
		{"owned lease, conflict on update", leaseOwnedBy(owned), 1},
		{"owned lease, two conflicts", leaseOwnedBy(owned), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Ours, on the fake clock.
			h := newHarness(t)
			seed(t, h.client, ours, tc.lease)
			h.take()
			h.failNext("update", "leases", tc.conflicts, conflict)
			a := h.agent(name, 0)
			// The fleet's watch shows an agent its existing Node before it starts (checkOwner).
			a.ObserveNode(ours.DeepCopy())
			r := newRun(a, h.ctx)
			done := make(chan struct{})
			go func() { r.lease.sync(); close(done) }()
			h.advance(time.Minute)
			<-done
			want := summary(h.take())

			// Upstream, on the real clock: its first sync runs at once.
			client := fake.NewClientset()
			seed(t, client, ours, tc.lease)
			var calls []call
			recordCalls(client, &calls, "update", "leases", tc.conflicts, conflict)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctl := lease.NewController(clock.RealClock{}, client, name, 40, nil, 10*time.Second, name, LeaseNamespace,
				nodeOwner(client, name))
			go ctl.Run(ctx)
			// Its next sync is 10 s away: once it has sent as many requests as ours, it is done.
			err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				return len(snapshot(&calls)) >= countCalls(want), nil
			})
			cancel()
			got := summary(snapshot(&calls))
			if err != nil || got != want {
				t.Fatalf("upstream controller sent %q, the agent %q", got, want)
			}
		})
	}
}

// heldRenewer is a LeaseRenewer whose answers wait until the test lets them go.
type heldRenewer struct {
	coordinationv1client.CoordinationV1Interface
	held chan func()
}

func (r heldRenewer) RenewLease(ctx context.Context, lease *coordinationv1.Lease, done func(*coordinationv1.Lease, error)) bool {
	out, err := r.Leases(lease.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	r.held <- func() { done(out, err) }
	return true
}

// TestAnAnswerAfterTheKubeletStoppedIsDropped: a renewal sent inline whose answer comes after its
// kubelet stopped is neither recorded nor followed by another tick, as a worker's request cut short
// by its run's end is not, and the scheduler does not wait for it any more.
func TestAnAnswerAfterTheKubeletStoppedIsDropped(t *testing.T) {
	h := newHarness(t)
	held := heldRenewer{h.client.CoordinationV1(), make(chan func(), 1)}
	a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: held}, "fakelet-00000", 0, "")
	a.Start(h.ctx)
	h.advance(15 * time.Second) // registered, the Lease created at 10.2 s
	h.clock.SetTime(t0.Add(20400 * time.Millisecond))
	answer := <-held.held // the first renewal, sent inline
	before := a.Stats().LeaseRenewals
	a.Stop()
	answer()
	h.advance(time.Minute)
	if got := a.Stats().LeaseRenewals; got != before {
		t.Errorf("%d renewals counted after the kubelet stopped, want %d", got, before)
	}
	select {
	case <-held.held:
		t.Error("a stopped kubelet renewed again")
	default:
	}
}
