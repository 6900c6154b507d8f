package transport

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
)

// watchClients returns the fleet's heartbeat clients for srv, impersonating nodes, over the wire
// package or the legacy path.
func watchClients(t testing.TB, host string, ca []byte, legacy bool) agent.Clients {
	t.Helper()
	clients, err := SharedClients(&rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, 1, true, new(atomic.Int64), Path{Legacy: legacy}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseWire(clients) })
	_, onWire := clients[0].Watches.(*wireWatcher)
	if onWire == legacy {
		t.Fatalf("legacy %v, but the watcher is a %T", legacy, clients[0].Watches)
	}
	return clients[0]
}

// recordedStream is a WatchHandler that keeps what it was told.
type recordedStream struct {
	mu     sync.Mutex
	opened []error
	events []agent.WatchEvent
	ends   int
	ended  chan error // the stream's last word: a failed Opened or Ended
}

func newRecordedStream() *recordedStream { return &recordedStream{ended: make(chan error, 2)} }

func (s *recordedStream) Opened(err error) {
	s.mu.Lock()
	s.opened = append(s.opened, err)
	s.mu.Unlock()
	if err != nil {
		s.ended <- err
	}
}

func (s *recordedStream) Event(e agent.WatchEvent) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *recordedStream) Ended(err error) {
	s.mu.Lock()
	s.ends++
	s.mu.Unlock()
	s.ended <- err
}

func (s *recordedStream) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.ended:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end")
		return nil
	}
}

func (s *recordedStream) seen() ([]error, []agent.WatchEvent, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened, s.events, s.ends
}

// podsWatch is the pod source's watch, as the agent's reflector sends it and client-go encodes it.
var podsWatch = agent.WatchRequest{Resource: "pods", Path: "/api/v1/pods", Query: url.Values{
	"fieldSelector":        {"spec.nodeName=fakelet-00001"},
	"allowWatchBookmarks":  {"true"},
	"sendInitialEvents":    {"true"},
	"resourceVersionMatch": {"NotOlderThan"},
	"timeoutSeconds":       {"437"},
	"timeout":              {"7m17s"},
	"watch":                {"true"},
}}

// TestWatcherMatchesClientGo sends a streaming list as the reflector does, through client-go and
// through the fleet's watcher, over the wire package and over the legacy path, against the same
// scripted answers: the same URL, content type, User-Agent and impersonation on the wire, and the
// same events and the same ending error read back.
func TestWatcherMatchesClientGo(t *testing.T) {
	t.Run("wire", func(t *testing.T) { testWatcherMatchesClientGo(t, false) })
	t.Run("legacy", func(t *testing.T) { testWatcherMatchesClientGo(t, true) })
}

func testWatcherMatchesClientGo(t *testing.T, legacy bool) {
	srv := &scriptServer{}
	ts := serveTLS(t, srv)
	clients := watchClients(t, ts.URL, certOf(ts), legacy)
	events := watchEvents(t)
	pb := http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf;stream=watch"}}
	// An event of 2 MB takes more than the stream's and the connection's first windows.
	big := events[0].DeepCopy()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "ns", ResourceVersion: "7",
		Annotations: map[string]string{"big": strings.Repeat("x", 2<<20)}}}
	big.Object = runtime.RawExtension{Raw: encode(t, Protobuf, corev1.SchemeGroupVersion, pod)}
	throttled := apierrors.NewTooManyRequests("too many requests, please try again later", 1)

	for _, tc := range []struct {
		name   string
		answer answer
		events int
	}{
		{"streaming list ended by 410", answer{code: 200, header: pb, body: protobufStream(t, events)}, 3},
		{"streaming list gzipped per flush", answer{code: 200, header: http.Header{"Content-Type": pb["Content-Type"], "Content-Encoding": {"gzip"}},
			body: gzipMembers(t, protobufStream(t, events[:2]), protobufStream(t, events[2:]))}, 3},
		{"answered in JSON", answer{code: 200, header: http.Header{"Content-Type": {"application/json;stream=watch"}}, body: jsonStream(t)}, 3},
		{"event of 2 MB", answer{code: 200, header: pb, body: protobufStream(t, append([]metav1.WatchEvent{*big}, events...))}, 4},
		{"closed at the server's timeout", answer{code: 200, header: pb, body: protobufStream(t, events[:3])}, 3},
		{"throttled", answer{code: 429, header: http.Header{"Content-Type": {Protobuf}},
			body: encode(t, Protobuf, metav1.SchemeGroupVersion, &throttled.ErrStatus)}, 0},
		{"throttled, text", answer{code: 429, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte("slow down\n")}, 0},
		// With Retry-After, client-go sends the watch again, 10 times at most, before it fails.
		{"throttled with Retry-After", answer{code: 429, header: http.Header{"Content-Type": {Protobuf}}, retryAfter: "0",
			body: encode(t, Protobuf, metav1.SchemeGroupVersion, &throttled.ErrStatus)}, 0},
		{"unavailable with Retry-After", answer{code: 503, header: http.Header{"Content-Type": {"text/plain"}}, retryAfter: "0", body: []byte("shutting down\n")}, 0},
		{"refused for an expired resource version", answer{code: 410, header: http.Header{"Content-Type": {"application/json"}},
			body: encode(t, "application/json", metav1.SchemeGroupVersion, &apierrors.NewResourceExpired("too old resource version: 1 (2)").ErrStatus)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.play(tc.answer)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ctx, _ = agent.RequestContext(ctx, "fakelet-00001")

			var want []agent.WatchEvent
			var wantErr error
			w, err := clients.Core.Pods("").Watch(ctx, metav1.ListOptions{
				FieldSelector:        "spec.nodeName=fakelet-00001",
				AllowWatchBookmarks:  true,
				SendInitialEvents:    ptr.To(true),
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				TimeoutSeconds:       ptr.To[int64](437),
			})
			if err != nil {
				wantErr = err
			} else {
				for e := range w.ResultChan() {
					if e.Type == watch.Error {
						wantErr = apierrors.FromObject(e.Object)
						break
					}
					m, _ := e.Object.(metav1.Object)
					want = append(want, agent.WatchEvent{Type: string(e.Type), ResourceVersion: m.GetResourceVersion(),
						InitialEventsEnd: m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"})
				}
				w.Stop()
			}

			s := newRecordedStream()
			clients.Watches.Watch(ctx, podsWatch, s)
			gotErr := s.wait(t)
			opened, got, _ := s.seen()

			reqs := srv.requests()
			if len(reqs)%2 != 0 {
				t.Fatalf("server saw %d requests, want as many from the watcher as from client-go", len(reqs))
			}
			if want := 1 + maxRetries; tc.answer.retryAfter != "" && len(reqs) != 2*want {
				t.Errorf("server saw %d requests, want %d from each", len(reqs), want)
			}
			cg, ours := reqs[0], reqs[len(reqs)/2]
			if cg.url != ours.url {
				t.Errorf("URL:\nclient-go %s\nfakelet   %s", cg.url, ours.url)
			}
			for _, h := range []string{"User-Agent", "Accept", "Accept-Encoding", "Impersonate-User", "Impersonate-Group"} {
				if strings.Join(cg.header.Values(h), ",") != strings.Join(ours.header.Values(h), ",") {
					t.Errorf("%s: client-go %q, fakelet %q", h, cg.header.Values(h), ours.header.Values(h))
				}
			}
			if ours.header.Get("Impersonate-User") != "system:node:fakelet-00001" {
				t.Errorf("impersonated %q", ours.header.Get("Impersonate-User"))
			}
			if len(want) != tc.events || len(got) != len(want) {
				t.Fatalf("events: client-go %v, fakelet %v", want, got)
			}
			for i := range want {
				if want[i] != got[i] {
					t.Errorf("event %d: client-go %+v, fakelet %+v", i, want[i], got[i])
				}
			}
			if len(opened) != 1 || (opened[0] == nil) != (err == nil) {
				t.Errorf("opened %v, client-go's watch returned %v", opened, err)
			}
			if (gotErr == nil) != (wantErr == nil) || (wantErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Errorf("end: client-go %v, fakelet %v", wantErr, gotErr)
			}
			var ws, gs *apierrors.StatusError
			if errors.As(wantErr, &ws) != errors.As(gotErr, &gs) || (ws != nil && ws.ErrStatus.Code != gs.ErrStatus.Code) {
				t.Errorf("end: client-go %#v, fakelet %#v", wantErr, gotErr)
			}
			if ws != nil && ws.ErrStatus.Details != nil && ws.ErrStatus.Details.RetryAfterSeconds != gs.ErrStatus.Details.RetryAfterSeconds {
				t.Errorf("Retry-After: client-go %d, fakelet %d", ws.ErrStatus.Details.RetryAfterSeconds, gs.ErrStatus.Details.RetryAfterSeconds)
			}
		})
	}
}
