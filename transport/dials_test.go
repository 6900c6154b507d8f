package transport

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/fleetname"
)

// TestASetDialsOnlyTheConnectionsItsRequestsNeed: 150 agents' requests arrive together on a set's
// client-go client (a fleet's start: registrations, GETs, CSINodes, Events) at a server that takes
// 100 streams a connection, as kube-apiserver does by default, and holds every request until all
// have come. Two connections carry them. Before, client-go's net/http transport dialed once for each
// request that found the connection full, and kept the one that answered first: a 1000-node run
// (make run) printed 1503 dialed, and a 200-node one 118, 105 of them client-go's (fakelet run
// --nodes 200 --duration 1m on the local control plane).
func TestASetDialsOnlyTheConnectionsItsRequestsNeed(t *testing.T) {
	const requests = 150
	var mu sync.Mutex
	came := 0
	all := make(chan struct{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if came++; came == requests {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}))
	ts.EnableHTTP2 = true
	ts.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 100}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	counter := &Counter{}
	clients, err := SharedClients(&rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{CAData: certOf(ts)}}, 1, true, nil, Path{}, counter)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseWire(clients) })
	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = clients[0].Main.Nodes().Get(context.Background(), fleetname.NodeName("fakelet", i), metav1.GetOptions{})
		}()
	}
	wg.Wait()
	if came != requests {
		t.Fatalf("the server saw %d requests, want %d", came, requests)
	}
	total, by := counter.Dials()
	if by.ClientGo > 3 || total != by.ClientGo {
		t.Errorf("%d connections dialed (%v) for %d requests at 100 streams a connection, want at most 3 (2 and one that raced)", total, by, requests)
	}
}
