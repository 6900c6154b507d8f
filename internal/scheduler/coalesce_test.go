package scheduler

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// TestCoalescedWorkRunsAtTheEndOfItsStep: with a 50 ms step, work due within one step runs together
// at its end, work due now runs at once, and a sleep ends at the end of its step too.
func TestCoalescedWorkRunsAtTheEndOfItsStep(t *testing.T) {
	s, fc, ctx := start(t)
	s.Coalesce(50 * time.Millisecond)
	l := &runLog{}
	mk := func(name string) *recorder { return &recorder{s: s, name: name, log: l, ctx: ctx} }
	s.After(0, mk("now"))
	s.After(10*time.Millisecond, mk("a"))
	s.After(30*time.Millisecond, mk("b"))
	s.After(50*time.Millisecond, mk("c"))
	s.After(60*time.Millisecond, mk("d"))
	slept := mk("slept")
	slept.sleep = 20 * time.Millisecond
	s.After(100*time.Millisecond, slept)

	s.Advance(fc, t0.Add(49*time.Millisecond))
	if log, _ := l.ran(); !slices.Equal(log, []string{"now"}) {
		t.Errorf("by 49 ms ran %v, want only the work due at once", log)
	}

	s.Advance(fc, t0.Add(time.Second))
	log, times := l.ran()
	// Work due in one step runs on several workers at once, in any order.
	ran := map[string]time.Duration{}
	for i, name := range log {
		ran[name] = times[i]
	}
	want := map[string]time.Duration{"now": 0, "a": 50 * time.Millisecond, "b": 50 * time.Millisecond,
		"c": 50 * time.Millisecond, "d": 100 * time.Millisecond, "slept": 150 * time.Millisecond}
	if len(log) != len(want) || !maps.Equal(ran, want) {
		t.Errorf("ran %v at %v, want %v", log, times, want)
	}
}
