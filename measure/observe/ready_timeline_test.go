package observe

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestReadyTimelineMatchesTimeline: counts kept as transitions arrive give Timeline's samples, at a
// step of the grid's (before and after the grid thinned), and exact ones after the last transition.
func TestReadyTimelineMatchesTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 1))
	statuses := []string{"True", "False", "Unknown"}
	for _, seconds := range []int{300, 3 * maxGridPoints} { // the second thins the grid once
		rt := newReadyTimeline()
		var ts []Transition
		for s := range seconds {
			for range rng.IntN(4) {
				tr := Transition{At: t0.Add(time.Duration(s)*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond),
					Node: fmt.Sprint("n", rng.IntN(20)), Kind: Condition, Type: "Ready", Status: statuses[rng.IntN(3)]}
				if n := len(ts); n > 0 && tr.At.Before(ts[n-1].At) {
					tr.At = ts[n-1].At
				}
				ts = append(ts, tr)
				rt.add(tr)
			}
		}
		end := t0.Add(time.Duration(seconds+30) * time.Second)
		step := rt.step
		if got, want := rt.Sample(t0, end, step), Timeline(ts, t0, end, step); !reflect.DeepEqual(got, want) {
			t.Errorf("%d s at a step of %v: the kept counts differ from Timeline's", seconds, step)
		}
		if len(rt.points) > maxGridPoints {
			t.Errorf("%d grid points kept, want at most %d", len(rt.points), maxGridPoints)
		}
	}
}

// TestRecorderKeepsFirstAndLastTransitions: beyond twice maxKept, the recorder keeps the first and
// the last maxKept transitions and counts them all.
func TestRecorderKeepsFirstAndLastTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := testingclock.NewFakePassiveClock(t0)
	r := NewRecorder(clock)
	n := 3*maxKept + 5
	for i := range n {
		clock.SetTime(t0.Add(time.Duration(i) * time.Second))
		r.mu.Lock()
		r.add(Transition{At: clock.Now(), Node: "n0", Kind: Condition, Type: "Ready", Status: "True"})
		r.mu.Unlock()
	}
	got := r.Transitions()
	if r.TransitionCount() != n || len(got) != 2*maxKept {
		t.Fatalf("%d counted, %d kept; want %d and %d", r.TransitionCount(), len(got), n, 2*maxKept)
	}
	if !got[maxKept-1].At.Equal(t0.Add((maxKept-1)*time.Second)) || !got[maxKept].At.Equal(t0.Add(time.Duration(n-maxKept)*time.Second)) ||
		!got[2*maxKept-1].At.Equal(clock.Now()) {
		t.Errorf("kept %v, %v .. %v: want the first and the last %d in order", got[maxKept-1].At, got[maxKept].At, got[2*maxKept-1].At, maxKept)
	}
}
