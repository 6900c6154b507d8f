package transport

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestMainClientHasNoTimeout: a kubelet sends its heartbeats on a client with a 10 s timeout, which
// client-go also sends as the URL's timeout parameter, and registration, the CSINode and Events on
// clients without one. The apiserver sees the difference: it lets a request without a timeout wait
// four times longer in API Priority and Fairness's queues before it answers 429.
func TestMainClientHasNoTimeout(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		srv := &scriptServer{}
		ts := serveTLS(t, srv)
		clients, err := SharedClients(&rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{CAData: certOf(ts)}}, 1, true, nil, Path{Legacy: legacy}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { CloseWire(clients) })
		c := clients[0]
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007"}}
		srv.play(answer{code: http.StatusCreated, header: http.Header{"Content-Type": {Protobuf}},
			body: encode(t, Protobuf, corev1.SchemeGroupVersion, node)})
		ctx := context.Background()
		_, _ = c.Core.Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		_, _ = c.Main.Nodes().Create(ctx, node, metav1.CreateOptions{})
		_, _ = c.Main.Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})
		_, _ = c.Storage.CSINodes().Get(ctx, node.Name, metav1.GetOptions{})
		want := []string{"10s", "", "", ""}
		seen := srv.requests()
		if len(seen) != len(want) {
			t.Fatalf("legacy %v: the server saw %d requests, want %d", legacy, len(seen), len(want))
		}
		for i, r := range seen {
			u, err := url.Parse(r.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := u.Query().Get("timeout"); got != want[i] {
				t.Errorf("legacy %v: %s %s has timeout %q, want %q", legacy, r.method, r.url, got, want[i])
			}
		}
	}
}
