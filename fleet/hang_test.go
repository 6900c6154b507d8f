package fleet

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/transport"
)

// hungServer accepts every request and never answers, until the client gives up or the test ends.
func hungServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		// Read the request as an apiserver does: only then does Go's server notice when the client
		// closes the connection, and end the handler.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, &requests
}

// TestHeartbeatClientTimesOutOnAHungServer: a request to an apiserver that never answers fails after
// the kubelet's 10 s client timeout, not later and not never.
func TestHeartbeatClientTimesOutOnAHungServer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the real 10 s client timeout")
	}
	t.Parallel()
	srv, _ := hungServer(t)
	clients, err := transport.SharedClients(&rest.Config{Host: srv.URL}, 1, false, nil, transport.Path{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err = clients[0].Coordination.Leases(agent.LeaseNamespace).Get(context.Background(), "fakelet-00000", metav1.GetOptions{})
	took := time.Since(begin)
	if err == nil {
		t.Fatal("a request to a server that never answers succeeded")
	}
	if took < 10*time.Second || took > 12*time.Second {
		t.Errorf("the request failed after %v, want the kubelet's 10 s timeout: %v", took, err)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
}

// TestHungRequestsDoNotPileUp runs agents whose apiserver never answers for two rounds of timeouts:
// each agent has at most its lease and its status request hanging, so goroutines stay bounded by the
// fleet's size and do not grow from round to round; stopping cancels what hangs at once, and goleak
// (TestMain) checks that nothing is left. The agents are of the heartbeat footprint, whose two loops
// the bound counts: the kubelet footprint's watches hang for as long as the server holds them, and
// its event writes retry 10 s after each timeout, in flight in one round and not in the next.
func TestHungRequestsDoNotPileUp(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for two rounds of the real 10 s client timeout")
	}
	t.Parallel()
	const nodes = 20
	srv, requests := hungServer(t)
	heartbeat, err := transport.SharedClients(&rest.Config{Host: srv.URL}, 2, false, nil, transport.Path{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The fleet's own client answers (checks and the node watch): only the kubelets' requests hang.
	f, err := NewWithClients(fleettest.Resolve(t, Config{Nodes: nodes, RegisterQPS: 1000, Template: agent.TemplateOptions{Images: 3}, Footprint: agent.FootprintHeartbeat}),
		fake.NewClientset(), heartbeat)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	<-f.Running()

	var samples []int
	for range 2 {
		time.Sleep(11 * time.Second) // a round of real client timeouts
		samples = append(samples, runtime.NumGoroutine())
	}
	t.Logf("%d requests sent; goroutines %d before, then %v", requests.Load(), before, samples)
	if requests.Load() < 2*nodes {
		t.Errorf("%d requests reached the hung server, want each of %d agents to have retried after its timeout", requests.Load(), nodes)
	}
	// Each agent has two requests hanging (its lease and its status loop), each about seven
	// goroutines: the worker, the client's timeout timer and connection (HTTP/1 here: a read and a
	// write loop), and the test server's side of the connection and handler.
	bound := before + 2*8*nodes
	for _, n := range samples {
		if n > bound {
			t.Errorf("%d goroutines with %d agents hanging (bound %d): hung requests pile up", n, nodes, bound)
		}
	}
	if samples[1] > samples[0]+nodes/2 {
		t.Errorf("goroutines grew from %d to %d between two rounds of timeouts", samples[0], samples[1])
	}

	begin := time.Now()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("stopping took %v with requests hanging: they were not cancelled", took)
	}
}
