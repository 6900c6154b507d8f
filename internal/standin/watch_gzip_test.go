package standin

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestAStreamingListIsGzippedOneMemberAFlush: as kube-apiserver v1.37 answers a client that accepts
// gzip, a streaming list comes gzipped, its initial events and their bookmark one member, each later
// flush another; a plain watch, and a client that does not ask, get it plain.
func TestAStreamingListIsGzippedOneMemberAFlush(t *testing.T) {
	_, cfg := ServeLoopback(t, Options{})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	leases := cs.CoordinationV1().Leases("kube-node-lease")
	if _, err := leases.Create(ctx, testLease("n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=1&allowWatchBookmarks=true"
	open := func(query, acceptEncoding string) *http.Response {
		t.Helper()
		ctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", jsonType)
		// Set by hand, so that the transport hands over the body as sent.
		req.Header.Set("Accept-Encoding", acceptEncoding)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", query, res.Status)
		}
		return res
	}
	const streaming = "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"

	res := open(streaming, "gzip")
	if got := res.Header.Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("a streaming list to a client that accepts gzip: Content-Encoding %q, want gzip", got)
	}
	body := bufio.NewReader(res.Body)
	member := func() []string {
		t.Helper()
		zr, err := gzip.NewReader(body)
		if err != nil {
			t.Fatalf("no gzip member: %v", err)
		}
		zr.Multistream(false)
		var types []string
		dec := json.NewDecoder(zr)
		for {
			var ev struct{ Type string }
			if err := dec.Decode(&ev); err == io.EOF {
				return types
			} else if err != nil {
				t.Fatalf("a member's events: %v", err)
			}
			types = append(types, ev.Type)
		}
	}
	if got := member(); len(got) != 2 || got[0] != "ADDED" || got[1] != "BOOKMARK" {
		t.Fatalf("the first member holds %v, want the initial ADDED and the bookmark that ends them", got)
	}
	got, _ := leases.Get(ctx, "n1", metav1.GetOptions{})
	got.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := leases.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := member(); len(got) != 1 || got[0] != "MODIFIED" {
		t.Fatalf("the renewal's member holds %v, want one MODIFIED", got)
	}

	for _, c := range []struct{ query, acceptEncoding string }{
		{"", "gzip"},               // a plain watch
		{streaming, "identity"},    // a client that asks for none (empty, Go's transport would ask for gzip itself)
		{streaming, "gzip;q=1"},    // not the apiserver's token
		{streaming, "deflate, br"}, // nor any other encoding
	} {
		if got := open(c.query, c.acceptEncoding).Header.Get("Content-Encoding"); got != "" {
			t.Errorf("watch%q with Accept-Encoding %q: Content-Encoding %q, want none", c.query, c.acceptEncoding, got)
		}
	}
}
