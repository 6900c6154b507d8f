package standin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"fakelet.dev/fakelet/internal/protofield"
)

const leasesPath = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

// BenchmarkLeaseRenewal is the stand-in's side of one renewal, the fleet's most frequent request: a
// protobuf Lease PUT decoded, checked, stored, encoded and answered, and its event written to one
// watch of every Lease (the measurement's), served on a goroutine of its own as on the wire. TLS
// and HTTP/2 are not in it; the client's side (the body's encoding) is kept to a reused buffer.
func BenchmarkLeaseRenewal(b *testing.B) {
	s := New(Options{})
	watch := s.serveWatch(b, leasesPath+"?watch=1&allowWatchBookmarks=true&resourceVersion=0", protobufType+","+jsonType)
	const nodes = 1000
	leases := make([]*coordinationv1.Lease, nodes)
	for i := range leases {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, s.request(http.MethodPost, leasesPath, protobufBody(testLease(fmt.Sprintf("n%d", i)))))
		if rec.Code != http.StatusCreated {
			b.Fatalf("POST: %d %s", rec.Code, rec.Body)
		}
		watch.next(b)
		leases[i] = decodeLease(b, rec)
	}
	put := newRenewals(s)
	var w answerWriter
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l := leases[i%nodes]
		l.Spec.RenewTime = &metav1.MicroTime{}
		w.reset()
		s.ServeHTTP(&w, put.request(l))
		if w.code != http.StatusOK {
			b.Fatalf("PUT: %d %s", w.code, w.body.Bytes())
		}
		watch.next(b)
		l.ResourceVersion = strconv.FormatUint(s.rv.Load(), 10) // what the answer says, undecoded
	}
}

// renewals makes a fleet's renewal requests with the fewest allocations of its own, so that a
// benchmark counts the stand-in's.
type renewals struct {
	s        *Server
	template http.Request
	raw, pb  []byte
	body     bytes.Reader
}

func newRenewals(s *Server) *renewals {
	r := &renewals{s: s}
	r.template = *s.request(http.MethodPut, leasesPath+"/x", nil)
	return r
}

func (r *renewals) request(l *coordinationv1.Lease) *http.Request {
	n := l.Size()
	r.raw = append(r.raw[:0], make([]byte, n)...)
	if _, err := l.MarshalToSizedBuffer(r.raw); err != nil {
		panic(err)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}, Raw: r.raw}
	r.pb = append(append(r.pb[:0], protofield.Magic...), make([]byte, u.Size())...)
	if _, err := u.MarshalToSizedBuffer(r.pb[len(protofield.Magic):]); err != nil {
		panic(err)
	}
	r.body.Reset(r.pb)
	req := r.template
	req.URL = &url.URL{Path: leasesPath + "/" + l.Name}
	req.Body = io.NopCloser(&r.body)
	req.ContentLength = int64(len(r.pb))
	return &req
}

// answerWriter is a reused http.ResponseWriter that keeps an answer.
type answerWriter struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (w *answerWriter) reset() {
	if w.h == nil {
		w.h = http.Header{}
	}
	clear(w.h)
	w.code = 0
	w.body.Reset()
}

func (w *answerWriter) Header() http.Header         { return w.h }
func (w *answerWriter) WriteHeader(code int)        { w.code = code }
func (w *answerWriter) Write(p []byte) (int, error) { return w.body.Write(p) }

// servedWatch is a watch served as ServeHTTP serves it, on a goroutine of its own, into a writer
// that tells each flush.
type servedWatch struct {
	flushes chan int // the bytes written before each flush
	h       http.Header
	n       int
}

func (s *Server) serveWatch(b *testing.B, path, accept string) *servedWatch {
	w := &servedWatch{flushes: make(chan int, 1), h: http.Header{}}
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx)
	r.Header.Set("Authorization", "Bearer "+s.token)
	r.Header.Set("Accept", accept)
	done := make(chan struct{})
	go func() { s.ServeHTTP(w, r); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	<-w.flushes // the initial events, none
	return w
}

func (w *servedWatch) Header() http.Header  { return w.h }
func (w *servedWatch) WriteHeader(code int) {}
func (w *servedWatch) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
func (w *servedWatch) Flush() { w.flushes <- w.n; w.n = 0 }

// next waits for the watch's next flush, which must carry an event.
func (w *servedWatch) next(b *testing.B) {
	if n := <-w.flushes; n == 0 {
		b.Fatal("the watch flushed nothing")
	}
}

func (s *Server) request(method, path string, body []byte) *http.Request {
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+s.token)
	r.Header.Set("Accept", protobufType+","+jsonType)
	r.Header.Set("Content-Type", protobufType)
	r.Header.Set("User-Agent", "kubelet/v1.37.2")
	return r
}

func protobufBody(l *coordinationv1.Lease) []byte {
	raw, err := l.Marshal()
	if err != nil {
		panic(err)
	}
	return envelope("coordination.k8s.io/v1", "Lease", raw)
}

func decodeLease(b *testing.B, rec *httptest.ResponseRecorder) *coordinationv1.Lease {
	var u runtime.Unknown
	if err := u.Unmarshal(rec.Body.Bytes()[len(protofield.Magic):]); err != nil {
		b.Fatal(err)
	}
	l := &coordinationv1.Lease{}
	if err := l.Unmarshal(u.Raw); err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkNodeStatusPatch is the stand-in's side of a kubelet's periodic node status patch of a
// fleet's Node, images and all: the heartbeat applied to the Node decoded from its protobuf, or
// the strategic merge in JSON that any other patch takes.
func BenchmarkNodeStatusPatch(b *testing.B) {
	for _, shortcut := range []bool{true, false} {
		name := map[bool]string{true: "heartbeat", false: "strategic-merge"}[shortcut]
		b.Run(name, func(b *testing.B) {
			heartbeatShortcut = shortcut
			defer func() { heartbeatShortcut = true }()
			s := New(Options{})
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, s.request(http.MethodPost, "/api/v1/nodes", envelopeOf(fleetNode(""))))
			var created corev1.Node
			if err := unwrapErr(rec.Body.Bytes(), &created); err != nil || rec.Code != http.StatusCreated {
				b.Fatalf("POST: %d %v", rec.Code, err)
			}
			var w answerWriter
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				hb := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format(time.RFC3339)
				patch := `{"metadata":{"uid":"` + string(created.UID) + `"},"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],` +
					`"conditions":[{"lastHeartbeatTime":"` + hb + `","type":"MemoryPressure"},{"lastHeartbeatTime":"` + hb + `","type":"DiskPressure"},{"lastHeartbeatTime":"` + hb + `","type":"PIDPressure"},{"lastHeartbeatTime":"` + hb + `","type":"Ready"}]}}`
				r := s.request(http.MethodPatch, "/api/v1/nodes/fakelet-00007/status", []byte(patch))
				r.Header.Set("Content-Type", "application/strategic-merge-patch+json")
				w.reset()
				s.ServeHTTP(&w, r)
				if w.code != http.StatusOK {
					b.Fatalf("PATCH: %d %s", w.code, w.body.Bytes())
				}
			}
		})
	}
}

func envelopeOf(n *corev1.Node) []byte {
	raw, err := n.Marshal()
	if err != nil {
		panic(err)
	}
	return envelope("v1", "Node", raw)
}

func unwrapErr(body []byte, into unmarshaler) error {
	var u runtime.Unknown
	if err := u.Unmarshal(body[len(protofield.Magic):]); err != nil {
		return err
	}
	return into.Unmarshal(u.Raw)
}
