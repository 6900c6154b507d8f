package standin

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// TestAuditIDIsTheCountAsAUUID: an Audit-Id is the answer's count laid out as a UUID, as it was
// with fmt, the count's top 16 bits first.
func TestAuditIDIsTheCountAsAUUID(t *testing.T) {
	s := New(Options{})
	for _, n := range []uint64{0, 1, 0xabcdef, 1<<48 - 1, 1 << 48, 1<<64 - 2} {
		s.audit.Store(n)
		want := fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32((n+1)>>48), (n+1)&0xffffffffffff)
		if got := s.auditID(); got != want {
			t.Errorf("Audit-Id after %d answers: %s, want %s", n, got, want)
		}
	}
}

// TestAWriteIsAnsweredAfterTheWriteLatency: with Options.WriteLatency, a create, an update and a
// delete are answered only once their latency has passed on the clock; a read is answered at once.
func TestAWriteIsAnsweredAfterTheWriteLatency(t *testing.T) {
	const latency = 3 * time.Millisecond
	clk := testclock.NewFakeClock(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	s := New(Options{Clock: clk, WriteLatency: latency})
	const leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
	lease := testLease("fakelet-00001")
	held := func(method, path string, body []byte, want int) {
		t.Helper()
		rec := httptest.NewRecorder()
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			s.ServeHTTP(rec, s.request(method, path, body))
		}()
		for !clk.HasWaiters() {
			select {
			case <-answered:
				t.Fatalf("%s %s: answered (%d) without waiting for the write latency", method, path, rec.Code)
			case <-time.After(time.Millisecond):
			}
		}
		clk.Step(latency - time.Nanosecond)
		select {
		case <-answered:
			t.Fatalf("%s %s: answered before its latency had passed", method, path)
		default:
		}
		clk.Step(time.Nanosecond)
		<-answered
		if rec.Code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body.Bytes(), want)
		}
	}
	held(http.MethodPost, leases, protobufBody(lease), http.StatusCreated)
	lease.ResourceVersion = ""
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](50)
	held(http.MethodPut, leases+"/fakelet-00001", protobufBody(lease), http.StatusOK)

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, s.request(http.MethodGet, leases+"/fakelet-00001", nil))
	if rec.Code != http.StatusOK || clk.HasWaiters() {
		t.Fatalf("GET: %d, a timer waiting %v; want 200 at once", rec.Code, clk.HasWaiters())
	}
	held(http.MethodDelete, leases+"/fakelet-00001", nil, http.StatusOK)
}
