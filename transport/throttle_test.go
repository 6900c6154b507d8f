package transport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
)

// TestThrottledAnswersAreCounted: an apiserver under overload answers 429 with a Retry-After, as API
// Priority and Fairness does; client-go waits and retries, as the kubelet's client does, and the
// counter counts every 429 although the agent sees only the final success.
func TestThrottledAnswersAreCounted(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 3 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"fakelet-00000","namespace":"kube-node-lease"}}`))
	}))
	defer srv.Close()
	var throttled atomic.Int64
	clients, err := SharedClients(&rest.Config{Host: srv.URL}, 1, true, &throttled, Path{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clients[0].Coordination.Leases(agent.LeaseNamespace).Get(context.Background(), "fakelet-00000", metav1.GetOptions{}); err != nil {
		t.Fatalf("after three 429s with Retry-After, the request should succeed: %v", err)
	}
	if got := throttled.Load(); got != 3 {
		t.Errorf("counted %d throttled answers, want 3", got)
	}
}
