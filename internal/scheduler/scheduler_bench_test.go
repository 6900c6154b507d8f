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
// from idle, as a fleet's does), and reports the process's CPU
// time per run: the dispatcher's heap, its timer and the handoff to a worker, with tasks that do
// nothing else.
func BenchmarkPaced(b *testing.B) {
	s := New(clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { s.Run(ctx); close(ran) }()
	var left atomic.Int64
	left.Store(int64(b.N))
	done := make(chan struct{})
	const tasks, every = 100, 100 * time.Millisecond
	cpu0 := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for range tasks {
		s.After(rand.N(every), &pacedTask{s: s, every: every, left: &left, done: done})
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	cancel()
	<-ran
}

type pacedTask struct {
	s     *Scheduler
	every time.Duration
	left  *atomic.Int64
	done  chan struct{}
}

func (t *pacedTask) Run() {
	switch n := t.left.Add(-1); {
	case n == 0:
		close(t.done)
	case n > 0:
		t.s.After(t.every+rand.N(t.every/25), t)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
