package agent

import (
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestKubeletSequenceOverSixMinutes holds an agent to the kubelet's requests and times, with its
// renewals sent by a worker and, as a fleet sends them, inline (RunInline).
func TestKubeletSequenceOverSixMinutes(t *testing.T) {
	t.Run("on a worker", func(t *testing.T) { testKubeletSequenceOverSixMinutes(t, false) })
	t.Run("inline", func(t *testing.T) { testKubeletSequenceOverSixMinutes(t, true) })
}

func testKubeletSequenceOverSixMinutes(t *testing.T, inline bool) {
	h := newHarness(t)
	var sentInline *atomic.Int32
	if inline {
		sentInline = h.renewInline()
	}
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(6 * time.Minute)
	calls := h.take()

	// At start the lease controller and the status loop run side by side, as in Kubelet.Run: the
	// first lease sync finds neither Lease nor Node (the owner reference needs the Node's UID) and
	// creates nothing; registration sleeps 100 ms, POSTs the Node and patches the status at once.
	// The next lease sync creates the Lease; then a PUT every 10.2 s (rand 0.5 in a 0.04 jitter), and
	// the unchanged status is reported again on the first sync 5 minutes after the last report.
	want := []struct {
		at   time.Duration
		what string
	}{
		{0, "get leases"},
		{0, "get nodes"},
		{100 * time.Millisecond, "create nodes"},
		{100 * time.Millisecond, "patch nodes/status"},
		{10200 * time.Millisecond, "get leases"},
		{10200 * time.Millisecond, "get nodes"},
		{10200 * time.Millisecond, "create leases"},
	}
	for i, c := range want {
		if i >= len(calls) || calls[i].at != c.at || calls[i].verb+" "+calls[i].res != c.what {
			t.Fatalf("request %d: got %v, want %s at %v\nall: %v", i, calls[i:min(i+1, len(calls))], c.what, c.at, calls)
		}
	}
	rest := calls[len(want):]
	var puts []time.Duration
	var patches []time.Duration
	for _, c := range rest {
		switch c.verb + " " + c.res {
		case "update leases":
			puts = append(puts, c.at)
		case "patch nodes/status":
			patches = append(patches, c.at)
		default:
			t.Errorf("unexpected request %v", c)
		}
	}
	// Lease created at 10.2 s, then renewed every 10.2 s until 360 s: 34 renewals.
	if len(puts) != 34 {
		t.Errorf("got %d lease PUTs in 6 minutes, want 34", len(puts))
	}
	prev := 10200 * time.Millisecond
	for _, at := range puts {
		if d := at - prev; d < 10*time.Second || d > 10400*time.Millisecond {
			t.Errorf("lease PUT at %v came %v after the previous renewal, want 10.0-10.4 s", at, d)
		}
		prev = at
	}
	// Status syncs at 0.1 + k*10.2 s; the first with 300 s since the report at 0.1 s is k=30.
	if len(patches) != 1 || patches[0] != 306100*time.Millisecond {
		t.Errorf("status patches after the first at %v, want one at 5m6.1s", patches)
	}

	lease, err := h.client.CoordinationV1().Leases(LeaseNamespace).Get(h.ctx, "fakelet-00000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkLease(t, lease, h.node("fakelet-00000").UID)
	if got := a.Stats().LeaseRenewals; got != 35 {
		t.Errorf("agent counted %d renewals, want 35 (1 create + 34 updates)", got)
	}
	if inline && sentInline.Load() != 34 {
		t.Errorf("%d renewals sent inline, want every update: 34", sentInline.Load())
	}
}

func checkLease(t *testing.T, lease *coordinationv1.Lease, nodeUID types.UID) {
	t.Helper()
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != lease.Name {
		t.Errorf("lease holderIdentity %v, want %s", lease.Spec.HolderIdentity, lease.Name)
	}
	if lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("lease duration %v, want 40", lease.Spec.LeaseDurationSeconds)
	}
	if len(lease.OwnerReferences) != 1 {
		t.Fatalf("lease owner references %v, want the Node", lease.OwnerReferences)
	}
	o := lease.OwnerReferences[0]
	if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != lease.Name || o.UID != nodeUID || o.UID == "" {
		t.Errorf("lease owner %+v, want v1 Node %s uid %v", o, lease.Name, nodeUID)
	}
}
