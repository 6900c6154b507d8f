package scheduler

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// BenchmarkPaced runs tasks on the real clock as agents' loops do, each rescheduling itself about
// every 100 ms with 4% jitter, 100 of them (1000 runs a second, so that the dispatcher mostly wakes
// from idle, as a fleet's does), and reports the process's CPU time per run (the dispatcher's heap,
// its timer and the handoff to a worker, with tasks that do nothing else) and how late a run is on
// average after its due time, with each coalescing step (Coalesce): what a step saves, and what it
// costs in timing.
func BenchmarkPaced(b *testing.B) {
	for _, step := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond} {
		b.Run("coalesce="+step.String(), func(b *testing.B) { paced(b, step) })
	}
}

func paced(b *testing.B, step time.Duration) {
	s := New(clock.RealClock{})
	s.Coalesce(step)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { s.Run(ctx); close(ran) }()
	var left, late atomic.Int64
	left.Store(int64(b.N))
	done := make(chan struct{})
	const tasks, every = 100, 100 * time.Millisecond
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range tasks {
		t := &pacedTask{s: s, every: every, left: &left, late: &late, done: done}
		t.after(rand.N(every))
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(late.Load())/float64(time.Microsecond)/float64(b.N), "late-µs/op")
	cancel()
	<-ran
}

type pacedTask struct {
	s     *Scheduler
	every time.Duration
	due   time.Time
	left  *atomic.Int64
	late  *atomic.Int64 // the runs' time after their due time, summed
	done  chan struct{}
}

func (t *pacedTask) after(d time.Duration) {
	t.due = time.Now().Add(d)
	t.s.After(d, t)
}

func (t *pacedTask) Run() {
	t.late.Add(int64(time.Since(t.due)))
	switch n := t.left.Add(-1); {
	case n == 0:
		close(t.done)
	case n > 0:
		t.after(t.every + rand.N(t.every/25))
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
