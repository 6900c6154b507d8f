package transport

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
)

// TestRetryAfterWaitsOnTheClock: a renewal answered 429 with Retry-After: 5 goes again once the
// fleet's clock has moved 5 s, not before, over the wire package and over the legacy net/http path.
// The wire connection flushes at once (FlushWindow < 0): its flush window is on the clock too.
func TestRetryAfterWaitsOnTheClock(t *testing.T) {
	t.Run("wire", func(t *testing.T) { testRetryAfterWaitsOnTheClock(t, false, false) })
	t.Run("wire, renewed without the wait", func(t *testing.T) { testRetryAfterWaitsOnTheClock(t, false, true) })
	t.Run("legacy", func(t *testing.T) { testRetryAfterWaitsOnTheClock(t, true, false) })
}

func testRetryAfterWaitsOnTheClock(t *testing.T, legacy, renew bool) {
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00000", Namespace: agent.LeaseNamespace, ResourceVersion: "41"}}
	stored := lease.DeepCopy()
	stored.ResourceVersion = "42"
	srv := &scriptServer{}
	srv.play(
		answer{code: http.StatusTooManyRequests, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte("too many requests"), retryAfter: "5"},
		answer{code: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: encode(t, "application/json", coordinationv1.SchemeGroupVersion, stored)},
	)
	ts := serveTLS(t, srv)
	clients, err := SharedClients(&rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{CAData: certOf(ts)}}, 1, true, new(atomic.Int64), Path{Legacy: legacy, FlushWindow: -1, Clock: fc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseWire(clients) })
	done := make(chan error, 1)
	if renew {
		ctx, _ := agent.RequestContext(context.Background(), lease.Name)
		clients[0].Coordination.(agent.LeaseRenewer).RenewLease(ctx, lease, func(_ *coordinationv1.Lease, err error) { done <- err })
	} else {
		go func() {
			_, err := clients[0].Coordination.Leases(agent.LeaseNamespace).Update(context.Background(), lease, metav1.UpdateOptions{})
			done <- err
		}()
	}
	timers := 1 // the Retry-After's
	if !legacy {
		timers++ // and the wire connection's health check
	}
	deadline := time.Now().Add(5 * time.Second)
	for fc.Waiters() < timers {
		select {
		case err := <-done:
			t.Fatalf("the renewal ended (%v) without waiting on the clock, after %d requests", err, len(srv.requests()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d timers wait on the clock after 5 s, want %d", fc.Waiters(), timers)
		}
		time.Sleep(time.Millisecond) // no event says a timer was made
	}
	fc.Step(5*time.Second - time.Millisecond)
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("%d requests before the Retry-After's 5 s, want 1", n)
	}
	fc.Step(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests, want 2: the 429 and its retry", n)
	}
}
