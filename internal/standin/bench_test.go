package standin

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkLeaseRenewal is the stand-in's side of one renewal, the fleet's most frequent request: a
// protobuf Lease PUT decoded, checked, stored, encoded and answered, with one watch of every Lease
// (the measurement's) handed the event. TLS and HTTP/2 are not in it.
func BenchmarkLeaseRenewal(b *testing.B) {
	s := New(Options{})
	st := s.stores[resourcePath("coordination.k8s.io", "v1", "leases")]
	w := &watcher{events: make(chan *event, 1), dropped: make(chan struct{})}
	st.watchers.add(w)
	const nodes = 1000
	leases := make([]*coordinationv1.Lease, nodes)
	for i := range leases {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, s.request(http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", protobufBody(testLease(fmt.Sprintf("n%d", i)))))
		<-w.events
		leases[i] = decodeLease(b, rec)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l := leases[i%nodes]
		l.Spec.RenewTime = &metav1.MicroTime{}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, s.request(http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"+l.Name, protobufBody(l)))
		if rec.Code != http.StatusOK {
			b.Fatalf("PUT: %d %s", rec.Code, rec.Body)
		}
		(<-w.events).frame(false)
		leases[i%nodes] = decodeLease(b, rec)
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
	if err := u.Unmarshal(rec.Body.Bytes()[len(protobufMagic):]); err != nil {
		b.Fatal(err)
	}
	l := &coordinationv1.Lease{}
	if err := l.Unmarshal(u.Raw); err != nil {
		b.Fatal(err)
	}
	return l
}
