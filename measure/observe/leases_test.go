package observe

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The Lease watch passes each new renewTime of our Leases to OnRenewal, and nothing else.
func TestWatchLeasesPassesRenewalsToOnRenewal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	renewAt := func(s int) *metav1.MicroTime {
		return &metav1.MicroTime{Time: time.Date(2026, 11, 29, 12, 0, s, 0, time.UTC)}
	}
	lease := func(name string, s int) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: leaseNamespace},
			Spec: coordinationv1.LeaseSpec{RenewTime: renewAt(s)}}
	}
	client := fake.NewClientset(lease("ours-0", 0), lease("theirs-0", 0))
	type renewal struct {
		node string
		at   time.Time
	}
	seen := make(chan renewal, 10)
	r := NewRecorder(nil)
	r.OnRenewal(func(node string, at time.Time) { seen <- renewal{node, at} })
	if err := r.WatchLeases(ctx, client, func(name string) bool { return name == "ours-0" }); err != nil {
		t.Fatal(err)
	}
	next := func() renewal {
		select {
		case r := <-seen:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no renewal passed to OnRenewal within 10 s")
			return renewal{}
		}
	}
	if got := next(); got.node != "ours-0" || !got.at.Equal(renewAt(0).Time) {
		t.Fatalf("first renewal %+v, want ours-0 at its listed renewTime", got)
	}
	leases := client.CoordinationV1().Leases(leaseNamespace)
	for _, l := range []*coordinationv1.Lease{lease("theirs-0", 10), lease("ours-0", 10)} {
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := next(); got.node != "ours-0" || !got.at.Equal(renewAt(10).Time) {
		t.Fatalf("renewal %+v, want ours-0 renewed at 10 s (another's Lease is not ours)", got)
	}
	if n := r.LeaseRenewals(); n != 2 {
		t.Errorf("%d renewals counted, want 2", n)
	}
}
