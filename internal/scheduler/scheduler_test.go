package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// runLog is what a test's recorders ran, and when (since t0).
type runLog struct {
	mu    sync.Mutex
	names []string
	times []time.Duration
}

// ran returns what ran so far.
func (l *runLog) ran() ([]string, []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.names), slices.Clone(l.times)
}

// recorder is a Task that records when it ran in its log, and optionally sleeps or reschedules itself.
type recorder struct {
	s     *Scheduler
	name  string
	log   *runLog
	sleep time.Duration
	every time.Duration
	ctx   context.Context
}

func (r *recorder) Run() {
	if r.sleep > 0 {
		if err := r.s.Sleep(r.ctx, r.sleep); err != nil {
			return
		}
	}
	r.log.mu.Lock()
	r.log.names = append(r.log.names, r.name)
	r.log.times = append(r.log.times, r.s.clock.Now().Sub(t0))
	r.log.mu.Unlock()
	if r.every > 0 {
		r.s.After(r.every, r)
	}
}

func start(t *testing.T) (*Scheduler, *testingclock.FakeClock, context.Context) {
	t.Helper()
	fc := testingclock.NewFakeClock(t0)
	s := New(fc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, fc, ctx
}

func TestRunsTasksInTimeOrderOnTheFakeClock(t *testing.T) {
	s, fc, ctx := start(t)
	l := &runLog{}
	mk := func(name string) *recorder { return &recorder{s: s, name: name, log: l, ctx: ctx} }
	s.After(3*time.Second, mk("c"))
	s.After(1*time.Second, mk("a"))
	s.After(1500*time.Millisecond, mk("b"))
	slow := mk("slept")
	slow.sleep = 5 * time.Second
	s.After(2*time.Second, slow)

	s.Advance(fc, t0.Add(time.Minute))

	log, times := l.ran()
	want := []string{"a", "b", "c", "slept"}
	wantTimes := []time.Duration{time.Second, 1500 * time.Millisecond, 3 * time.Second, 7 * time.Second}
	if len(log) != len(want) {
		t.Fatalf("ran %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] || times[i] != wantTimes[i] {
			t.Errorf("run %d: %s at %v, want %s at %v", i, log[i], times[i], want[i], wantTimes[i])
		}
	}
	if got := fc.Now(); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("clock at %v after Advance, want %v", got, t0.Add(time.Minute))
	}
}

func TestPeriodicTaskRunsEveryPeriod(t *testing.T) {
	s, fc, ctx := start(t)
	l := &runLog{}
	s.After(0, &recorder{s: s, name: "tick", log: l, every: 10 * time.Second, ctx: ctx})
	s.Advance(fc, t0.Add(100*time.Second))
	_, times := l.ran()
	if len(times) != 11 {
		t.Fatalf("ran %d times in 100 s, want 11 (at 0, 10, ..., 100 s): %v", len(times), times)
	}
	for i, d := range times {
		if d != time.Duration(i)*10*time.Second {
			t.Errorf("run %d at %v, want %v", i, d, time.Duration(i)*10*time.Second)
		}
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	s, fc, _ := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	l := &runLog{}
	r := &recorder{s: s, name: "never", log: l, sleep: time.Hour, ctx: ctx}
	s.After(0, r)
	s.Advance(fc, t0.Add(time.Second))
	cancel()
	s.WaitIdle()
	s.Advance(fc, t0.Add(2*time.Hour))
	if log, _ := l.ran(); len(log) != 0 {
		t.Fatalf("a cancelled sleep went on to run: %v", log)
	}
}

func TestConcurrentSleepersEachGetAWorker(t *testing.T) {
	s, fc, ctx := start(t)
	l := &runLog{}
	for i := 0; i < 50; i++ {
		s.After(0, &recorder{s: s, name: "hung", log: l, sleep: 10 * time.Second, ctx: ctx})
	}
	s.Advance(fc, t0.Add(time.Minute))
	_, times := l.ran()
	if len(times) != 50 {
		t.Fatalf("%d of 50 sleepers finished", len(times))
	}
	for _, d := range times {
		if d != 10*time.Second {
			t.Fatalf("a sleeper woke at %v, want 10s: sleepers must not wait for each other", d)
		}
	}
	if w := s.Workers(); w != 50 {
		t.Errorf("started %d workers for 50 parked tasks, want 50", w)
	}
}

func BenchmarkScheduleAndRun(b *testing.B) {
	fc := testingclock.NewFakeClock(t0)
	s := New(fc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	task := nop{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.After(time.Duration(i%1000)*time.Millisecond, task)
		if i%1000 == 999 {
			s.Advance(fc, fc.Now().Add(time.Second))
		}
	}
}

type nop struct{}

func (nop) Run() {}
