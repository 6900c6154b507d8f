package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/internal/fleettest"
)

// TestClaimRenewalWhoseAnswerWasLostIsNotATakeover: a renewal of the claim that the server stored
// but whose answer the run never got (a client timeout on a slow server) leaves the run's copy one
// resourceVersion behind, and its next renewal is refused with a conflict. The claim is still the
// run's own: the run goes on. Before, it stopped as if another run had taken the claim over, naming
// itself as the taker: a 50,000-node fleet against the stand-in (fakelet bench --target stand-in)
// printed "the claim was taken over by another run (run 20261202-045018-3b2274)", its own run ID.
func TestClaimRenewalWhoseAnswerWasLostIsNotATakeover(t *testing.T) {
	client := fake.NewClientset()
	fleettest.APIServerLike(client)
	fleettest.ResourceVersions(client)
	c := newClaim(client, Config{Fleet: "f", NamePrefix: "fakelet", RunID: "run-a"})
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	if err := c.take(ctx, nil, now); err != nil {
		t.Fatal(err)
	}
	lost := true
	client.PrependReactor("update", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !lost {
			return false, nil, nil
		}
		lost = false
		obj := a.(clienttesting.UpdateAction).GetObject().DeepCopyObject()
		m, _ := meta.Accessor(obj)
		m.SetResourceVersion(m.GetResourceVersion() + "0")
		// Stored, then the answer lost on the way back.
		if err := client.Tracker().Update(a.GetResource(), obj, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, nil, errors.New("context deadline exceeded")
	})
	if err := c.renew(ctx, now.Add(10*time.Second)); err == nil || errors.Is(err, errClaimLost) {
		t.Fatalf("the renewal whose answer was lost: %v, want its timeout, not a lost claim", err)
	}
	if err := c.renew(ctx, now.Add(20*time.Second)); err != nil {
		t.Fatalf("the next renewal: %v, want the claim kept", err)
	}
	if !c.held || holder(c.latest) != "run-a" {
		t.Fatalf("after the renewals the run holds %v the claim of %q", c.held, holder(c.latest))
	}
}
