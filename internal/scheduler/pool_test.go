package scheduler

import (
	"runtime"
	"testing"
	"time"
)

// TestPoolShrinksAfterABurst: a burst of parked tasks (a partition hanging every node's requests)
// needs a worker each, but once they are done at most maxIdleWorkers stay.
func TestPoolShrinksAfterABurst(t *testing.T) {
	s, fc, ctx := start(t)
	before := runtime.NumGoroutine()
	l := &runLog{}
	const burst = 500
	for range burst {
		s.After(0, &recorder{s: s, name: "hung", log: l, sleep: 10 * time.Second, ctx: ctx})
	}
	s.Advance(fc, t0.Add(time.Minute))
	if w := s.Workers(); w != burst {
		t.Errorf("peak of %d workers for %d parked tasks, want %d", w, burst, burst)
	}
	// Exiting workers return just after they report idle: give them a moment.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+maxIdleWorkers && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+maxIdleWorkers {
		t.Errorf("%d goroutines after the burst, %d before: the pool kept more than %d idle workers", n, before, maxIdleWorkers)
	}
	// The pool still works, with the workers it kept.
	s.After(0, &recorder{s: s, name: "after", log: l, ctx: ctx})
	s.Advance(fc, t0.Add(2*time.Minute))
	if log, _ := l.ran(); len(log) != burst+1 || log[burst] != "after" {
		t.Errorf("%d tasks ran, want %d", len(log), burst+1)
	}
}
