package fleet

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	protobufserializer "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
)

// watchServer answers every watch with the same protobuf stream, as kube-apiserver encodes it: a
// streaming list's object, its initial-events-end bookmark, a change, and a 410 ERROR event.
func watchServer(t *testing.T) (*httptest.Server, func() []*http.Request) {
	t.Helper()
	enc := protobufserializer.NewSerializer(scheme.Scheme, scheme.Scheme)
	object := func(o runtime.Object) []byte {
		b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(enc, corev1.SchemeGroupVersion), o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	status := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 5 (11)"}
	events := []metav1.WatchEvent{
		{Type: "ADDED", Object: runtime.RawExtension{Raw: object(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "5",
			Annotations: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{NodeName: "fakelet-00001"}})}},
		{Type: "BOOKMARK", Object: runtime.RawExtension{Raw: object(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})}},
		{Type: "MODIFIED", Object: runtime.RawExtension{Raw: object(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "11"}})}},
		{Type: "ERROR", Object: runtime.RawExtension{Raw: object(status)}},
	}
	var mu sync.Mutex
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			b, err := e.Marshal()
			if err != nil {
				t.Error(err)
				return
			}
			var size [4]byte
			binary.BigEndian.PutUint32(size[:], uint32(len(b)))
			_, _ = w.Write(size[:])
			_, _ = w.Write(b)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []*http.Request {
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

type recordedStream struct {
	opened error
	events []agent.WatchEvent
	ended  chan error
}

func (s *recordedStream) Opened(err error) {
	s.opened = err
	if err != nil {
		s.ended <- err
	}
}
func (s *recordedStream) Event(e agent.WatchEvent) { s.events = append(s.events, e) }
func (s *recordedStream) Ended(err error)          { s.ended <- err }

// TestWatcherMatchesClientGo sends a streaming list as the reflector does, through client-go and
// through the fleet's watcher: the same query, content type and User-Agent on the wire, and the same
// events read back, the 410 ERROR event included.
func TestWatcherMatchesClientGo(t *testing.T) {
	srv, seen := watchServer(t)
	clients, err := heartbeatClients(&rest.Config{Host: srv.URL}, 1, IdentityFleet, nil, wirePath{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	w, err := clients[0].Core.Pods("").Watch(ctx, metav1.ListOptions{
		FieldSelector:        "spec.nodeName=fakelet-00001",
		AllowWatchBookmarks:  true,
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		TimeoutSeconds:       ptr.To[int64](437),
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []agent.WatchEvent
	var wantErr error
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

	s := &recordedStream{ended: make(chan error, 1)}
	clients[0].Watches.Watch(ctx, agent.WatchRequest{Resource: "pods", Path: "/api/v1/pods", Query: url.Values{
		"fieldSelector":        {"spec.nodeName=fakelet-00001"},
		"allowWatchBookmarks":  {"true"},
		"sendInitialEvents":    {"true"},
		"resourceVersionMatch": {"NotOlderThan"},
		"timeoutSeconds":       {"437"},
		"timeout":              {"7m17s"},
		"watch":                {"true"},
	}}, s)
	var gotErr error
	select {
	case gotErr = <-s.ended:
	case <-ctx.Done():
		t.Fatal("the stream did not end")
	}

	reqs := seen()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	cg, ours := reqs[0], reqs[1]
	if cg.URL.String() != ours.URL.String() {
		t.Errorf("URL:\nclient-go %s\nfakelet   %s", cg.URL, ours.URL)
	}
	for _, h := range []string{"User-Agent", "Accept"} {
		if cg.Header.Get(h) != ours.Header.Get(h) {
			t.Errorf("%s: client-go %q, fakelet %q", h, cg.Header.Get(h), ours.Header.Get(h))
		}
	}
	if s.opened != nil {
		t.Fatalf("opened: %v", s.opened)
	}
	if len(want) != 3 || len(s.events) != len(want) {
		t.Fatalf("events: client-go %v, fakelet %v", want, s.events)
	}
	for i := range want {
		if want[i] != s.events[i] {
			t.Errorf("event %d: client-go %+v, fakelet %+v", i, want[i], s.events[i])
		}
	}
	if !apierrors.IsResourceExpired(gotErr) || !apierrors.IsResourceExpired(wantErr) || gotErr.Error() != wantErr.Error() {
		t.Errorf("end: client-go %v, fakelet %v; want both 410 Expired", wantErr, gotErr)
	}
}

func TestWatcherRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many requests, please try again later", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	clients, err := heartbeatClients(&rest.Config{Host: srv.URL}, 1, IdentityFleet, nil, wirePath{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &recordedStream{ended: make(chan error, 1)}
	clients[0].Watches.Watch(context.Background(), agent.WatchRequest{Resource: "pods", Path: "/api/v1/pods", Query: url.Values{"watch": {"true"}}}, s)
	if err := <-s.ended; !apierrors.IsTooManyRequests(err) {
		t.Errorf("refused watch: %v, want 429", err)
	}
}
