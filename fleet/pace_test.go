package fleet

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/agent"
)

// feed gives p n answers of latency d, the first bad of them failing with err.
func feed(p *pacer, n int, d time.Duration, bad int, err error) {
	for i := range n {
		req := agent.Request{Verb: "update", Resource: "leases", Latency: d}
		if i < bad {
			req.Err = err
		}
		p.Request(req)
	}
}

func TestPacerRaisesItsRateWhileTheServerAnswersAndHalvesItOnOverload(t *testing.T) {
	p := newPacer(100, nil)
	var got []float64
	for range 5 { // slow start: doubled each interval up to the ceiling
		feed(p, 10, 5*time.Millisecond, 0, nil)
		got = append(got, p.adjust())
	}
	feed(p, 10, 5*time.Millisecond, 1, apierrors.NewTooManyRequests("overloaded", 1))
	got = append(got, p.adjust()) // halved
	feed(p, 10, 5*time.Millisecond, 1, apierrors.NewTooManyRequests("overloaded", 1))
	got = append(got, p.adjust()) // held: the 429s of the rate before the cut
	feed(p, 10, 5*time.Millisecond, 0, nil)
	got = append(got, p.adjust()) // congestion avoidance: one step up
	feed(p, 10, 5*time.Millisecond, 0, nil)
	got = append(got, p.adjust())
	want := []float64{20, 40, 80, 100, 100, 50, 50, 60, 70}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rates %v, want %v", got, want)
	}
	if peak, cuts := p.paced(); peak != 100 || cuts != 1 {
		t.Errorf("peak %v and %d cuts, want 100 and 1", peak, cuts)
	}
}

func TestPacerCutsWhenLatencyRisesWellAboveItsFloor(t *testing.T) {
	p := newPacer(1000, nil)
	feed(p, 10, 20*time.Millisecond, 0, nil)
	feed(p, 10, 10*time.Millisecond, 0, nil) // floor 15 ms
	if got := p.adjust(); got != 20 {
		t.Fatalf("rate %v, want 20", got)
	}
	feed(p, 10, 40*time.Millisecond, 0, nil) // under 3x the floor and under 50 ms: not overload
	if got := p.adjust(); got != 40 {
		t.Fatalf("rate %v at 40 ms, want 40", got)
	}
	feed(p, 10, 60*time.Millisecond, 0, nil) // over 3x 15 ms and 50 ms
	if got := p.adjust(); got != 20 {
		t.Fatalf("rate %v at 60 ms, want 20: latency four times its floor is overload", got)
	}
	feed(p, 3, time.Second, 0, nil) // held after the cut, and too few answers to judge anyway
	feed(p, 2, time.Second, 0, nil)
	p.adjust()
	feed(p, 4, time.Second, 0, nil)
	if got := p.adjust(); got != 30 {
		t.Errorf("rate %v after 4 slow answers, want 30: too few to judge", got)
	}
}

func TestPacerCountsTheTransportsRetried429sAnd5xxAndLeavesOutWatchesAndPartitions(t *testing.T) {
	var throttled int64 = 7 // from before the fleet ran
	p := newPacer(100, func() int64 { return throttled })
	feed(p, 10, time.Millisecond, 0, nil)
	if got := p.adjust(); got != 20 {
		t.Fatalf("rate %v, want 20: the 429s before it started are not its", got)
	}
	throttled++ // retried by client-go: the agent saw a success
	feed(p, 10, time.Millisecond, 0, nil)
	if got := p.adjust(); got != 10 {
		t.Fatalf("rate %v after a retried 429, want 10", got)
	}
	p.adjust() // held
	p.Request(agent.Request{Verb: "watch", Resource: "pods", Latency: time.Minute, Err: apierrors.NewTooManyRequests("", 1)})
	feed(p, 10, time.Millisecond, 10, fmt.Errorf("update lease: %w", agent.ErrPartitioned))
	if got := p.adjust(); got != 20 {
		t.Fatalf("rate %v, want 20: a watch's and a partition fault's answers are not the server's", got)
	}
	feed(p, 10, time.Millisecond, 1, apierrors.NewServiceUnavailable("etcd"))
	if got := p.adjust(); got != 10 {
		t.Fatalf("rate %v after a 503, want 10", got)
	}
	for range 10 {
		feed(p, 10, time.Millisecond, 10, apierrors.NewInternalError(fmt.Errorf("boom")))
		p.adjust()
	}
	if got := p.adjust(); got != PaceMinQPS {
		t.Errorf("rate %v after many 500s, want the floor %v", got, PaceMinQPS)
	}
}

// TestRegistrationSlowsDownOn429sAndSpeedsUpAfter: Node creates rejected with 429 for the first 3 s
// of the fake clock make the fleet start fewer kubelets a second, and more once they pass; the
// fleet's Registration says how many failed and when every Node was seen.
func TestRegistrationSlowsDownOn429sAndSpeedsUpAfter(t *testing.T) {
	tf := startFleetWith(t, Config{Nodes: 100, RegisterQPS: 100}, func(tf *testFleet) {
		tf.client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			if tf.clock.Now().Before(t0.Add(3 * time.Second)) {
				return true, nil, apierrors.NewTooManyRequests("overloaded", 1)
			}
			return false, nil, nil
		})
	})
	started := func(at time.Duration) int {
		tf.advance(t, at)
		return tf.Progress().Started
	}
	first, overloaded, after := started(time.Second), started(3*time.Second), started(6*time.Second)
	later := started(7 * time.Second)
	if first != 11 {
		t.Errorf("%d kubelets started in the first second, want 11 (at once, then 10/s)", first)
	}
	if overloaded-first > 10 {
		t.Errorf("%d kubelets started in the 2 s of 429s, want at most 10 (half the rate, held for an interval)", overloaded-first)
	}
	if later-after <= 10 {
		t.Errorf("%d kubelets started in the 7th second, after the 429s, want more than the first second's 10", later-after)
	}
	tf.advance(t, 20*time.Second)
	r := tf.Registration()
	if r.Registered.IsZero() || r.Cuts == 0 || r.Failed == 0 || r.PeakQPS <= PaceStartQPS {
		t.Fatalf("registration %+v: want every node registered, a cut, failures and a peak above the start", r)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}
