package observe

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/internal/standin"
)

// standIn serves fakelet's stand-in for kube-apiserver on a loopback port, for the Lease watch to
// watch over the wire as it does a run's apiserver, and returns a protobuf clientset for it.
func standIn(t *testing.T) kubernetes.Interface {
	t.Helper()
	return clientOf(t, standInConfig(t))
}

// standInConfig serves the stand-in and returns a protobuf client configuration for it.
func standInConfig(t *testing.T) *rest.Config {
	t.Helper()
	_, cfg := standin.ServeLoopback(t, standin.Options{})
	cfg.ContentType, cfg.QPS = "application/vnd.kubernetes.protobuf", -1
	return cfg
}

func clientOf(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func renewAt(s int) *metav1.MicroTime {
	return &metav1.MicroTime{Time: time.Date(2026, 11, 29, 12, 0, s, 0, time.UTC)}
}

func testLease(name string, s int) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: leaseNamespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: renewAt(s)}}
}

type renewal struct {
	node string
	at   time.Time
}

// watchedLeases starts the Lease watch of r on client with ours-0 ours, and returns the renewals it
// passes to OnRenewal.
func watchedLeases(t *testing.T, ctx context.Context, r *Recorder, client kubernetes.Interface) func() renewal {
	t.Helper()
	seen := make(chan renewal, 10)
	r.OnRenewal(func(node string, at time.Time) { seen <- renewal{node, at} })
	if err := r.WatchLeases(ctx, client, func(name string) bool { return name == "ours-0" }); err != nil {
		t.Fatal(err)
	}
	return func() renewal {
		select {
		case r := <-seen:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no renewal passed to OnRenewal within 10 s")
			return renewal{}
		}
	}
}

// The Lease watch passes each new renewTime of our Leases to OnRenewal, and nothing else.
func TestWatchLeasesPassesRenewalsToOnRenewal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := standIn(t)
	leases := client.CoordinationV1().Leases(leaseNamespace)
	for _, l := range []*coordinationv1.Lease{testLease("ours-0", 0), testLease("theirs-0", 0)} {
		if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := NewRecorder(nil)
	next := watchedLeases(t, ctx, r, client)
	if got := next(); got.node != "ours-0" || !got.at.Equal(renewAt(0).Time) {
		t.Fatalf("first renewal %+v, want ours-0 at its listed renewTime", got)
	}
	for _, name := range []string{"theirs-0", "ours-0"} {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Spec.RenewTime = renewAt(10)
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := next(); got.node != "ours-0" || !got.at.Equal(renewAt(10).Time) {
		t.Fatalf("renewal %+v, want ours-0 renewed at 10 s (another's Lease is not ours)", got)
	}
	if n := r.LeaseRenewals(); n != 2 {
		t.Errorf("%d renewals counted, want 2", n)
	}
}

// A Lease deleted and created again is recorded as both, the new one with its new uid, and its
// first renewTime counts as a renewal.
func TestWatchLeasesRecordsALeaseDeletedAndCreatedAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := standIn(t)
	leases := client.CoordinationV1().Leases(leaseNamespace)
	first, err := leases.Create(ctx, testLease("ours-0", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorder(nil)
	next := watchedLeases(t, ctx, r, client)
	next()
	if err := leases.Delete(ctx, "ours-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := leases.Create(ctx, testLease("ours-0", 5), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(); !got.at.Equal(renewAt(5).Time) {
		t.Fatalf("renewal %+v, want the new Lease's at 5 s", got)
	}
	var kinds []string
	for _, tr := range r.Transitions() {
		kinds = append(kinds, string(tr.Kind)+" "+tr.Reason)
	}
	want := []string{string(LeaseCreated) + " " + string(first.UID), string(LeaseDeleted) + " ", string(LeaseCreated) + " " + string(again.UID)}
	if len(kinds) != len(want) || kinds[0] != want[0] || kinds[1] != want[1] || kinds[2] != want[2] {
		t.Errorf("transitions %q, want %q", kinds, want)
	}
}

func TestWatchLeasesRefusesAClientWithoutARESTClient(t *testing.T) {
	if err := NewRecorder(nil).WatchLeases(context.Background(), fake.NewClientset(), func(string) bool { return true }); err == nil {
		t.Error("no error from a fake clientset, which has no REST client to watch with")
	}
}

// The Lease watch asks for its answers as they are, not gzipped: its list, its watch and its
// streaming list.
func TestWatchLeasesAsksForAnswersNotGzipped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := standInConfig(t)
	var mu sync.Mutex
	asked := map[string]bool{} // Accept-Encoding of the Lease requests
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Path, "/leases") {
				mu.Lock()
				asked[req.Header.Get("Accept-Encoding")] = true
				mu.Unlock()
			}
			return next.RoundTrip(req)
		})
	})
	if err := NewRecorder(nil).WatchLeases(ctx, clientOf(t, cfg), func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || !asked["identity"] {
		t.Errorf("the Lease watch's requests asked for encodings %v, want identity alone", asked)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
