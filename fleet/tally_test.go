package fleet

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

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

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
		{"not found", "get", apierrors.NewNotFound(leaseResource, "fakelet-00001"), "404"},
		{"conflict", "update", apierrors.NewConflict(leaseResource, "fakelet-00001", errors.New("changed")), "409"},
		{"already exists", "create", apierrors.NewAlreadyExists(leaseResource, "fakelet-00001"), "409"},
		{"forbidden", "patch", apierrors.NewForbidden(leaseResource, "fakelet-00001", errors.New("no")), "403"},
		{"unauthorized", "update", apierrors.NewUnauthorized("who"), "401"},
		{"throttled", "update", apierrors.NewTooManyRequests("slow down", 1), "429"},
		{"server timeout", "update", apierrors.NewTimeoutError("etcd", 1), "504"},
		{"unavailable", "update", apierrors.NewServiceUnavailable("later"), "503"},
		{"teapot", "get", apierrors.NewGenericServerResponse(418, "GET", leaseResource, "x", "", 0, false), "418"},
		{"wrapped status", "get", fmt.Errorf("get lease: %w", apierrors.NewNotFound(leaseResource, "x")), "404"},
		{"partitioned", "update", fmt.Errorf("update leases fakelet-00001: %w", agent.ErrPartitioned), CodeTimeout},
		{"deadline", "update", context.DeadlineExceeded, CodeTimeout},
		{"client timeout", "update", &url.Error{Op: "Put", URL: "https://127.0.0.1/x", Err: timeoutError{}}, CodeTimeout},
		{"refused", "update", &url.Error{Op: "Put", URL: "https://127.0.0.1/x", Err: errors.New("connection refused")}, CodeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, got := Classify(tc.verb, tc.err)
			if got != tc.want {
				t.Errorf("code %q, want %q", got, tc.want)
			}
			if want := slices.Index(knownCodes[:], tc.want); i != want {
				t.Errorf("index %d, want %d", i, want)
			}
		})
	}
}

// The switch that resolves codes to array indexes agrees with the code list.
func TestCodeIndexesMatchLabels(t *testing.T) {
	for i, c := range knownCodes[:len(knownCodes)-2] {
		var code int32
		fmt.Sscan(c, &code)
		if got, label := httpCode(code); got != i || label != c {
			t.Errorf("httpCode(%d) = %d, %q; want %d, %q", code, got, label, i, c)
		}
	}
}

func req(verb, resource string, err error, latency time.Duration, sent, received int64) agent.Request {
	return agent.Request{Verb: verb, Resource: resource, Err: err, Latency: latency, RequestBytes: sent, ResponseBytes: received}
}

func TestTallySeries(t *testing.T) {
	tally := NewTally(0)
	notFound := apierrors.NewNotFound(leaseResource, "fakelet-00001")
	conflict := apierrors.NewConflict(leaseResource, "fakelet-00001", errors.New("changed"))
	tally.Request(req("update", "leases", nil, 3*time.Millisecond, 300, 310))
	tally.Request(req("update", "leases", nil, 20*time.Second, 300, 0))
	tally.Request(req("update", "leases", conflict, time.Millisecond, 300, 200))
	tally.Request(req("get", "leases", notFound, time.Millisecond, 0, 150))
	tally.Request(req("deletecollection", "configmaps", nil, time.Millisecond, 0, 0))
	tally.Request(req("get", "nodes", apierrors.NewGenericServerResponse(418, "GET", leaseResource, "x", "", 0, false), time.Millisecond, 0, 0))
	var got []string
	for _, s := range tally.Series() {
		got = append(got, fmt.Sprintf("%s %s %s n=%d failed=%d bytes=%d/%d", s.Verb, s.Resource, s.Code, s.Count, s.Failed, s.RequestBytes, s.ResponseBytes))
	}
	want := []string{
		"deletecollection configmaps 200 n=1 failed=0 bytes=0/0",
		"get leases 404 n=1 failed=0 bytes=0/150", // not found is an answer a kubelet expects
		"get nodes 418 n=1 failed=1 bytes=0/0",
		"update leases 200 n=2 failed=0 bytes=600/310",
		"update leases 409 n=1 failed=1 bytes=300/200",
	}
	if !slices.Equal(got, want) {
		t.Errorf("series\n%q\nwant\n%q", got, want)
	}
	s := tally.Series()[3]
	if h := s.Latency; h.Count != 2 || h.Cumulative[len(h.Cumulative)-1] != 1 || h.Cumulative[slices.Index(h.Bounds, 0.004)] != 1 ||
		h.Cumulative[slices.Index(h.Bounds, 0.002)] != 0 || h.Sum != 20.003 {
		t.Errorf("update leases 200 latency %+v, want one at 3 ms and one past the last bound", h)
	}
	reqs := tally.Requests()
	if len(reqs) != 4 || reqs[3] != (Count{Verb: "update", Resource: "leases", OK: 2, Failed: 1, RequestBytes: 900, ResponseBytes: 510}) {
		t.Errorf("requests %+v", reqs)
	}
	if tally.Errors() != 2 {
		t.Errorf("%d errors, want 2", tally.Errors())
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
	tally := NewTally(10 * time.Second)
	tally.LeaseRenewed(0) // a node's first renewal
	tally.LeaseRenewed(10120 * time.Millisecond)
	tally.LeaseRenewed(10380 * time.Millisecond)
	n, h := tally.Renewals()
	if n != 3 || h.Count != 2 {
		t.Fatalf("%d renewals, %d intervals; want 3 and 2 (the first renewal has none)", n, h.Count)
	}
	for i, b := range h.Bounds {
		var want uint64
		switch {
		case b >= 10.4:
			want = 2
		case b >= 10.15:
			want = 1
		}
		if h.Cumulative[i] != want {
			t.Errorf("le=%v holds %d, want %d", b, h.Cumulative[i], want)
		}
	}
}

// The heartbeat path allocates nothing for a known verb, resource and code.
func TestTallyAllocatesNothing(t *testing.T) {
	tally := NewTally(0)
	notFound := apierrors.NewNotFound(leaseResource, "fakelet-00001")
	conflict := apierrors.NewConflict(leaseResource, "fakelet-00001", errors.New("changed"))
	for name, f := range map[string]func(){
		"request ok":        func() { tally.Request(req("update", "leases", nil, time.Millisecond, 300, 300)) },
		"request not found": func() { tally.Request(req("get", "leases", notFound, time.Millisecond, 0, 100)) },
		"request conflict":  func() { tally.Request(req("update", "leases", conflict, time.Millisecond, 300, 100)) },
		"heartbeat":         func() { tally.Heartbeat(agent.KindLease, nil) },
		"heartbeat failed":  func() { tally.Heartbeat(agent.KindStatus, conflict) },
		"lease renewed":     func() { tally.LeaseRenewed(10 * time.Second) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

func TestTallyConcurrentUse(t *testing.T) {
	tally := NewTally(0)
	const goroutines, calls = 8, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				verb := knownVerbs[(g+i)%len(knownVerbs)]
				tally.Request(req(verb, "leases", nil, time.Millisecond, 1, 2))
				tally.Request(req(verb, "configmaps", nil, time.Millisecond, 1, 2)) // through the map
				tally.Heartbeat(agent.KindLease, nil)
				tally.LeaseRenewed(10 * time.Second)
			}
		})
	}
	wg.Wait()
	var n, sent int64
	for _, s := range tally.Series() {
		n += s.Count
		sent += s.RequestBytes
	}
	if n != 2*goroutines*calls || sent != n {
		t.Errorf("%d requests and %d bytes recorded, want %d of each", n, sent, 2*goroutines*calls)
	}
}

// BenchmarkTally measures what one heartbeat costs the record: a lease PUT (request, heartbeat,
// renewal interval), from many goroutines at once as in a fleet.
func BenchmarkTally(b *testing.B) {
	tally := NewTally(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tally.Request(req("update", "leases", nil, 1200*time.Microsecond, 300, 310))
			tally.Heartbeat(agent.KindLease, nil)
			tally.LeaseRenewed(10200 * time.Millisecond)
		}
	})
}
