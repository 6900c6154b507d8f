package scheduler

import (
	"sync/atomic"
	"testing"
	"time"
)

// inliner is an InlineTask whose RunInline does its work at once when inline is set, leaving it in
// flight until finish is called, and declines otherwise.
type inliner struct {
	s        *Scheduler
	inline   bool
	inlined  atomic.Int32
	onWorker atomic.Int32
}

func (t *inliner) RunInline() bool {
	if !t.inline {
		return false
	}
	t.inlined.Add(1)
	return true
}

func (t *inliner) Run() { t.onWorker.Add(1) }

// TestAnInlineTaskRunsOnTheDispatcher: a task that takes its work inline runs no worker, and the
// scheduler counts it busy until it is released; one that declines runs on a worker.
func TestAnInlineTaskRunsOnTheDispatcher(t *testing.T) {
	s, fc, _ := start(t)
	in := &inliner{s: s, inline: true}
	out := &inliner{s: s}
	s.After(time.Second, in)
	s.After(time.Second, out)
	fc.SetTime(t0.Add(time.Second))

	idle := make(chan struct{})
	go func() { s.WaitIdle(); close(idle) }()
	s.mu.Lock()
	for out.onWorker.Load() == 0 || in.inlined.Load() == 0 {
		s.cond.Wait() // a worker's task ends with a broadcast, and the inline one is dispatched first
	}
	s.mu.Unlock()
	select {
	case <-idle:
		t.Fatal("WaitIdle returned while the inline task's work was in flight")
	default:
	}
	s.Release()
	<-idle
	if in.onWorker.Load() != 0 || out.inlined.Load() != 0 || s.Workers() != 1 || s.Runs() != 2 {
		t.Errorf("inline task: %d inline, %d on a worker; declining task: %d on a worker; %d workers, %d runs; want 1, 0; 1; 1, 2",
			in.inlined.Load(), in.onWorker.Load(), out.onWorker.Load(), s.Workers(), s.Runs())
	}
}
