package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
)

// leaseClients serves h over TLS and HTTP/2 and returns the Coordination client of the fleet's
// heartbeat clients for it.
func leaseClients(tb testing.TB, h http.Handler, legacy bool) leanCoordination {
	tb.Helper()
	ts := serveTLS(tb, h)
	clients, err := SharedClients(&rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{CAData: certOf(ts)}}, 1, true, new(atomic.Int64), Path{Legacy: legacy}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	lean, ok := clients[0].Coordination.(leanCoordination)
	if !ok {
		tb.Fatalf("the heartbeat clients' Coordination is a %T, not the lean one", clients[0].Coordination)
	}
	if (lean.w.s.wire == nil) != legacy {
		tb.Fatalf("legacy %v, but the wire client is %v", legacy, lean.w.s.wire)
	}
	tb.Cleanup(func() { CloseWire(clients) })
	return lean
}

func encode(t testing.TB, mediaType string, gv schema.GroupVersion, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	data, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, gv), obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestLeasePutMatchesClientGo sends each lease update twice, through client-go's generated client
// and through the fleet's leaseWriter, over the wire package and over the legacy net/http path,
// against the same scripted answers: the server must see the same requests, the caller get the
// same Lease or the same error, and the agent's Meter count the same bytes.
func TestLeasePutMatchesClientGo(t *testing.T) {
	t.Run("wire", func(t *testing.T) { testLeasePutMatchesClientGo(t, false, false) })
	t.Run("wire, renewed without the wait", func(t *testing.T) { testLeasePutMatchesClientGo(t, false, true) })
	t.Run("legacy", func(t *testing.T) { testLeasePutMatchesClientGo(t, true, false) })
}

// testLeasePutMatchesClientGo sends the lean way with Update, or, if renew is set, with RenewLease,
// whose timeout is the heartbeat client's rather than its context's.
func testLeasePutMatchesClientGo(t *testing.T, legacy, renew bool) {
	srv := &scriptServer{}
	lean := leaseClients(t, srv, legacy)
	upstream := lean.CoordinationV1Interface
	if renew {
		lean.w.s.timeout = 100 * time.Millisecond // the hanging answer's, as the upstream call's context has
	}

	now := metav1.NewMicroTime(time.Date(2026, 11, 29, 21, 0, 0, 123456000, time.UTC))
	sent := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007", Namespace: agent.LeaseNamespace, ResourceVersion: "41",
			UID: "lease-uid", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "fakelet-00007", UID: "node-uid"}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fakelet-00007"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
	}
	stored := sent.DeepCopy()
	stored.ResourceVersion = "42"
	stored.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1"}}
	pb := http.Header{"Content-Type": {Protobuf}}
	status := func(err *apierrors.StatusError) []byte {
		return encode(t, Protobuf, schema.GroupVersion{Version: "v1"}, &err.ErrStatus)
	}
	conflict := apierrors.NewConflict(leasesResource, sent.Name, errFake("the object has been modified"))
	throttled := apierrors.NewTooManyRequests("too many requests, please try again later", 0)

	for _, tc := range []struct {
		name     string
		script   []answer
		requests int
	}{
		{"renewed", []answer{{code: 200, header: pb, body: encode(t, Protobuf, coordinationv1.SchemeGroupVersion, stored)}}, 1},
		{"answered in JSON", []answer{{code: 200, header: http.Header{"Content-Type": {"application/json"}}, body: encode(t, "application/json", coordinationv1.SchemeGroupVersion, stored)}}, 1},
		{"conflict", []answer{{code: 409, header: pb, body: status(conflict)}}, 1},
		{"not found", []answer{{code: 404, header: pb, body: status(apierrors.NewNotFound(leasesResource, sent.Name))}}, 1},
		{"text error", []answer{{code: 500, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte("etcd is down\n")}}, 1},
		{"error without a body", []answer{{code: 502}}, 1},
		{"throttled twice, then renewed", []answer{
			{code: 429, header: pb, body: status(throttled), retryAfter: "0"},
			{code: 429, header: pb, body: status(throttled), retryAfter: "0"},
			{code: 200, header: pb, body: encode(t, Protobuf, coordinationv1.SchemeGroupVersion, stored)}}, 3},
		{"unavailable with Retry-After, then renewed", []answer{
			{code: 503, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte("shutting down"), retryAfter: "0"},
			{code: 200, header: pb, body: encode(t, Protobuf, coordinationv1.SchemeGroupVersion, stored)}}, 2},
		{"throttled until client-go gives up", []answer{{code: 429, header: pb, body: status(throttled), retryAfter: "0"}}, 1 + maxRetries},
		{"reset stream", []answer{{action: "reset"}}, 1},
		{"dropped connection", []answer{{action: "drop"}}, 1},
		{"timeout", []answer{{action: "hang"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			update := func(leases coordinationv1client.LeaseInterface) (*coordinationv1.Lease, error, *agent.Meter) {
				ctx, meter := agent.RequestContext(context.Background(), sent.Name)
				if tc.script[0].action == "hang" {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
					defer cancel()
				}
				l, err := leases.Update(ctx, sent, metav1.UpdateOptions{})
				return l, err, meter
			}
			srv.play(tc.script...)
			wantLease, wantErr, wantMeter := update(upstream.Leases(agent.LeaseNamespace))
			want := srv.requests()
			srv.play(tc.script...)
			var gotLease *coordinationv1.Lease
			var gotErr error
			var gotMeter *agent.Meter
			if renew {
				gotLease, gotErr, gotMeter = renewLease(t, lean, sent)
			} else {
				gotLease, gotErr, gotMeter = update(lean.Leases(agent.LeaseNamespace))
			}
			got := srv.requests()

			if len(want) != tc.requests || len(got) != len(want) {
				t.Fatalf("client-go sent %d requests and the lean writer %d, want %d", len(want), len(got), tc.requests)
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("request %d differs:\n lean:      %+v\n client-go: %+v", i, got[i], want[i])
				}
			}
			if wantErr != nil {
				t.Logf("client-go: %v\nlean:      %v", wantErr, gotErr)
			}
			if !sameError(gotErr, wantErr) {
				t.Errorf("error: lean %#v, client-go %#v", gotErr, wantErr)
			}
			gs, gr := gotMeter.Counted()
			ws, wr := wantMeter.Counted()
			if gs != ws || gr != wr {
				t.Errorf("bytes counted: lean %d sent, %d received; client-go %d, %d", gs, gr, ws, wr)
			}
			if !reflect.DeepEqual(gotLease, wantLease) {
				t.Errorf("lease: lean %+v, client-go %+v", gotLease, wantLease)
			}
			if wantErr == nil && (wantLease == nil || wantLease.ResourceVersion != "42") {
				t.Errorf("client-go returned %+v, not the stored lease: the script is wrong", wantLease)
			}
		})
	}
}

// renewLease renews lease with RenewLease and waits for its answer.
func renewLease(t *testing.T, lean leanCoordination, lease *coordinationv1.Lease) (*coordinationv1.Lease, error, *agent.Meter) {
	t.Helper()
	type result struct {
		lease *coordinationv1.Lease
		err   error
	}
	ctx, meter := agent.RequestContext(context.Background(), lease.Name)
	done := make(chan result, 2)
	if !lean.RenewLease(ctx, lease, func(l *coordinationv1.Lease, err error) { done <- result{l, err} }) {
		t.Fatal("RenewLease sent nothing over the wire")
	}
	r := <-done
	return r.lease, r.err, meter
}

// sameError compares errors as a caller sees them: API errors field by field, errors of the wire
// (a *url.Error from net/http or the wire package) by their text, but for stream IDs, which count
// each connection's own requests, and for how a dropped connection shows: as the end of its
// stream or, when the server's close raced frames still arriving (the kernel then resets), as a
// reset, whichever client it is.
func sameError(got, want error) bool {
	var gu, wu *url.Error
	if errors.As(got, &gu) && errors.As(want, &wu) {
		return gu.Op == wu.Op && gu.URL == wu.URL && gu.Timeout() == wu.Timeout() && wireText(gu.Err) == wireText(wu.Err)
	}
	return reflect.DeepEqual(got, want)
}

func wireText(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return "connection lost"
	}
	return streamID.ReplaceAllString(err.Error(), "stream ID N")
}

var streamID = regexp.MustCompile(`stream ID \d+`)

type errFake string

func (e errFake) Error() string { return string(e) }
