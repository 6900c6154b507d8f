package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"fakelet.dev/fakelet/agent"
)

var leases = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// timeoutError is what net/http returns when a client's Timeout passes.
type timeoutError struct{}

func (timeoutError) Error() string   { return "Client.Timeout exceeded while awaiting headers" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name, verb string
		err        error
		want       string
	}{
		{"get ok", "get", nil, "200"},
		{"update ok", "update", nil, "200"},
		{"create ok", "create", nil, "201"},
		{"not found", "get", apierrors.NewNotFound(leases, "fakelet-00001"), "404"},
		{"conflict", "update", apierrors.NewConflict(leases, "fakelet-00001", errors.New("changed")), "409"},
		{"already exists", "create", apierrors.NewAlreadyExists(leases, "fakelet-00001"), "409"},
		{"forbidden", "patch", apierrors.NewForbidden(leases, "fakelet-00001", errors.New("no")), "403"},
		{"unauthorized", "update", apierrors.NewUnauthorized("who"), "401"},
		{"throttled", "update", apierrors.NewTooManyRequests("slow down", 1), "429"},
		{"server timeout", "update", apierrors.NewTimeoutError("etcd", 1), "504"},
		{"unavailable", "update", apierrors.NewServiceUnavailable("later"), "503"},
		{"teapot", "get", apierrors.NewGenericServerResponse(418, "GET", leases, "x", "", 0, false), "418"},
		{"wrapped status", "get", fmt.Errorf("get lease: %w", apierrors.NewNotFound(leases, "x")), "404"},
		{"partitioned", "update", fmt.Errorf("update leases fakelet-00001: %w", agent.ErrPartitioned), CodeTimeout},
		{"deadline", "update", context.DeadlineExceeded, CodeTimeout},
		{"client timeout", "update", &url.Error{Op: "Put", URL: "https://127.0.0.1/x", Err: timeoutError{}}, CodeTimeout},
		{"refused", "update", &url.Error{Op: "Put", URL: "https://127.0.0.1/x", Err: errors.New("connection refused")}, CodeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, got := classify(tc.verb, tc.err)
			if got != tc.want {
				t.Errorf("code %q, want %q", got, tc.want)
			}
			if want := slices.Index(knownCodes[:], tc.want); i != want {
				t.Errorf("index %d, want %d", i, want)
			}
		})
	}
}

// The switches that resolve label values to array indexes agree with the label lists.
func TestIndexesMatchLabels(t *testing.T) {
	for i, v := range knownVerbs {
		if got := verbIndex(v); got != i {
			t.Errorf("verbIndex(%q) = %d, want %d", v, got, i)
		}
	}
	for i, r := range knownResources {
		if got := resourceIndex(r); got != i {
			t.Errorf("resourceIndex(%q) = %d, want %d", r, got, i)
		}
	}
	for i, c := range knownCodes[:len(knownCodes)-2] {
		var code int32
		fmt.Sscan(c, &code)
		if got, label := httpCode(code); got != i || label != c {
			t.Errorf("httpCode(%d) = %d, %q; want %d, %q", code, got, label, i, c)
		}
	}
	if verbIndex("PUT") >= 0 || resourceIndex("configmaps") >= 0 {
		t.Error("unknown verb or resource resolved to an index")
	}
}

func TestUnknownLabelValuesAreRecorded(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	r := m.Recorder()
	r.Request("deletecollection", "configmaps", nil, time.Millisecond)
	r.Request("get", "nodes", apierrors.NewGenericServerResponse(418, "GET", leases, "x", "", 0, false), time.Millisecond)
	r.Heartbeat("pod", nil)
	got := seriesOf(t, m, "fakelet_request_duration_seconds")
	want := []string{`code="200",resource="configmaps",verb="deletecollection"`, `code="418",resource="nodes",verb="get"`}
	if !slices.Equal(got, want) {
		t.Errorf("request series %q, want %q", got, want)
	}
	if beats := seriesOf(t, m, "fakelet_heartbeats_total"); !slices.Contains(beats, `kind="pod",result="success"`) {
		t.Errorf("heartbeat series %q lack kind pod", beats)
	}
}

func TestRenewalBuckets(t *testing.T) {
	b := RenewalBuckets(10 * time.Second)
	for i := 1; i < len(b); i++ {
		if b[i] <= b[i-1] {
			t.Fatalf("buckets not strictly increasing: %v", b)
		}
	}
	// Every 50 ms across the kubelet's window and a little past it, to the millisecond.
	for _, want := range []float64{10, 10.05, 10.1, 10.15, 10.2, 10.25, 10.3, 10.35, 10.4, 10.45, 10.5, 10.55, 10.6, 40} {
		if !slices.Contains(b, want) {
			t.Errorf("no bucket at %v s in %v", want, b)
		}
	}
	if got := RenewalBuckets(100 * time.Second); !slices.Contains(got, 100.5) || !slices.Contains(got, 400.0) {
		t.Errorf("a 100 s renew interval gets buckets %v, want them scaled", got)
	}
}

func TestLeaseRenewalInterval(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	r := m.Recorder()
	r.LeaseRenewed(0) // a node's first renewal
	r.LeaseRenewed(10120 * time.Millisecond)
	r.LeaseRenewed(10380 * time.Millisecond)
	h := gatherHistogram(t, m, "fakelet_lease_renewal_interval_seconds", "", "")
	if h.GetSampleCount() != 2 {
		t.Fatalf("%d intervals observed, want 2 (the first renewal has none)", h.GetSampleCount())
	}
	for _, b := range h.GetBucket() {
		var want uint64
		switch {
		case b.GetUpperBound() >= 10.4:
			want = 2
		case b.GetUpperBound() >= 10.15:
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}

// The heartbeat path allocates nothing once a verb, resource and code has been seen.
func TestRecorderAllocatesNothing(t *testing.T) {
	r := New(Options{NoProcessCollectors: true}).Recorder()
	notFound := apierrors.NewNotFound(leases, "fakelet-00001")
	conflict := apierrors.NewConflict(leases, "fakelet-00001", errors.New("changed"))
	for name, f := range map[string]func(){
		"request ok":        func() { r.Request("update", "leases", nil, time.Millisecond) },
		"request not found": func() { r.Request("get", "leases", notFound, time.Millisecond) },
		"request conflict":  func() { r.Request("update", "leases", conflict, time.Millisecond) },
		"heartbeat":         func() { r.Heartbeat(agent.KindLease, nil) },
		"heartbeat failed":  func() { r.Heartbeat(agent.KindStatus, conflict) },
		"lease renewed":     func() { r.LeaseRenewed(10 * time.Second) },
	} {
		f() // the first call of a combination creates its series
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

func TestRecorderConcurrentUse(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	r := m.Recorder()
	const goroutines, calls = 8, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				verb := knownVerbs[(g+i)%len(knownVerbs)]
				r.Request(verb, "leases", nil, time.Millisecond)
				r.Heartbeat(agent.KindLease, nil)
				r.LeaseRenewed(10 * time.Second)
			}
		})
	}
	wg.Wait()
	var total uint64
	families, _ := m.Registry().Gather()
	for _, f := range families {
		if f.GetName() == "fakelet_request_duration_seconds" {
			for _, metric := range f.GetMetric() {
				total += metric.GetHistogram().GetSampleCount()
			}
		}
	}
	if total != goroutines*calls {
		t.Errorf("%d requests recorded, want %d", total, goroutines*calls)
	}
}

// BenchmarkRecorder measures what one heartbeat costs the metrics: a lease PUT (request, heartbeat,
// renewal interval), from many goroutines at once as in a fleet.
func BenchmarkRecorder(b *testing.B) {
	r := New(Options{NoProcessCollectors: true}).Recorder()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Request("update", "leases", nil, 1200*time.Microsecond)
			r.Heartbeat(agent.KindLease, nil)
			r.LeaseRenewed(10200 * time.Millisecond)
		}
	})
}

func BenchmarkRecorderRequest(b *testing.B) {
	r := New(Options{NoProcessCollectors: true}).Recorder()
	conflict := apierrors.NewConflict(leases, "fakelet-00001", errors.New("changed"))
	for _, bc := range []struct {
		name string
		err  error
	}{{"ok", nil}, {"conflict", conflict}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Request("update", "leases", bc.err, 1200*time.Microsecond)
			}
		})
	}
}
