package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/fleettest"
)

// A renewal whose answer was lost (the apiserver applied it, the client timed out) leaves the run
// with a stale copy of its own claim: the next renewal conflicts, and the claim is still this run's.
// Before, the run stopped as if another had taken it over, naming itself: a 500-node bench on a
// loaded machine (etcd put p99 7.9 s) stopped after 54 s with "the claim was taken over by another
// run (run 20261202-050225-b55164)", its own run; a 100-node one, whose GET of the claim timed out
// too, with "...taken over by another run (another run)".
func TestClaimRenewedAfterItsOwnLostRenewal(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	fleettest.ResourceVersions(client)
	c := &claim{client: client, name: "fakelet-claim.fakelet.0-of-1", fleet: "fakelet", run: "run-a", duration: 40 * time.Second}
	if err := c.take(ctx, nil, t0); err != nil {
		t.Fatal(err)
	}
	// The lost renewal: applied on the server, never seen by the run.
	lost := c.latest.DeepCopy()
	lost.Spec.RenewTime = &metav1.MicroTime{Time: t0.Add(10 * time.Second)}
	if _, err := client.CoordinationV1().Leases(agent.LeaseNamespace).Update(ctx, lost, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.renew(ctx, t0.Add(20*time.Second)); err != nil {
		t.Fatalf("renewal after its own lost renewal: %v", err)
	}
	if !c.held || !c.latest.Spec.RenewTime.Time.Equal(t0.Add(20*time.Second)) {
		t.Errorf("held %v, renewed at %v; want held, renewed at +20s", c.held, c.latest.Spec.RenewTime)
	}

	// A conflict whose holder cannot be read (the GET times out too) is not a takeover.
	stale := c.latest.DeepCopy()
	if _, err := client.CoordinationV1().Leases(agent.LeaseNamespace).Update(ctx, stale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	failGet := true
	client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failGet {
			failGet = false
			return true, nil, errors.New("context deadline exceeded")
		}
		return false, nil, nil
	})
	if err := c.renew(ctx, t0.Add(25*time.Second)); err == nil || errors.Is(err, errClaimLost) || !c.held {
		t.Errorf("renewal whose holder could not be read: %v, held %v; want a failure to retry, still held", err, c.held)
	}
	if err := c.renew(ctx, t0.Add(27*time.Second)); err != nil {
		t.Fatalf("the next renewal: %v", err)
	}

	// Taken over by another run: still lost.
	other := c.latest.DeepCopy()
	other.Spec.HolderIdentity = ptr.To("run-b")
	if _, err := client.CoordinationV1().Leases(agent.LeaseNamespace).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.renew(ctx, t0.Add(30*time.Second)); !errors.Is(err, errClaimLost) || c.held {
		t.Errorf("renewal of a claim run-b took: %v, held %v; want the claim lost", err, c.held)
	}
}
