// Package scheduler runs timed work for many fake kubelets on one injected clock.
//
// A real kubelet keeps a goroutine per loop, asleep between heartbeats. Ten thousand of them would pin
// ten thousand grown stacks; here a single dispatcher holds every agent's next deadline in a heap and
// hands due work to an elastic pool of workers, so memory follows the number of requests in flight, not
// the number of nodes. Work that must wait in the middle of a request path (a backoff, a hung
// request) parks its worker with Sleep, which is also scheduled on the same clock: with a fake clock a
// test can step through hours of heartbeats exactly and quickly (see Advance).
package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Task is work to run at a given time. A task that its owner no longer wants (its kubelet stopped)
// still runs, and must find that out itself, typically from its context.
type Task interface {
	Run()
}

// InlineTask is a Task that can usually start its work without blocking: the dispatcher calls
// RunInline on its own goroutine, and hands the task to a worker (Run) only if it returns false. At a
// hundred heartbeats a second, waking a worker for each cost more than the heartbeat itself. A task
// whose RunInline returned true has work in flight that ends elsewhere (a request whose answer is
// handled where it arrives): the scheduler counts it busy, as it counts a task on a worker, until the
// task calls Release.
type InlineTask interface {
	Task
	RunInline() bool
}

// Scheduler runs Tasks at their time on an elastic pool of workers.
type Scheduler struct {
	clock    clock.Clock
	coalesce time.Duration // see Coalesce

	mu     sync.Mutex
	cond   *sync.Cond // signalled when the scheduler may have become idle
	queue  queue
	seq    uint64
	busy   int // tasks handed to workers and not finished (parked ones included)
	parked int // busy tasks waiting in Sleep
	live   int // worker goroutines
	peak   int // most workers at once, for stats
	idle   atomic.Int32
	runs   atomic.Uint64 // tasks run, for stats

	kick chan struct{}
	runq chan entry
	done chan struct{}
	wg   sync.WaitGroup
}

// New returns a scheduler on clock. Nothing runs until Run is called.
func New(c clock.Clock) *Scheduler {
	s := &Scheduler{
		clock: c,
		kick:  make(chan struct{}, 1),
		runq:  make(chan entry),
		done:  make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Coalesce makes work due in the future run at the end of its step of length q on the clock (q <= 0:
// at its own time). Work due in one step then runs together, on workers that are already awake: at a
// hundred heartbeats a second, each on its own wakeup cost the fleet more CPU in waking threads and
// polling than in sending requests. Work due now runs at once. Call it before scheduling anything.
func (s *Scheduler) Coalesce(q time.Duration) { s.coalesce = q }

// Clock returns the scheduler's clock.
func (s *Scheduler) Clock() clock.Clock { return s.clock }

// At schedules task to run at t (at once if t has passed).
func (s *Scheduler) At(t time.Time, task Task) {
	s.push(entry{when: t, task: task})
}

// After schedules task to run d from now.
func (s *Scheduler) After(d time.Duration, task Task) {
	s.At(s.clock.Now().Add(d), task)
}

// Sleep parks the calling task for d on the scheduler's clock. It returns ctx.Err() if ctx ends first.
// Only code running inside a Task may call it.
func (s *Scheduler) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	sl := &sleeper{wake: make(chan struct{})}
	// Parking and queueing the wake-up happen at once, so WaitIdle never sees this task parked
	// without its deadline in the queue.
	s.mu.Lock()
	s.parked++
	s.seq++
	first := s.queue.push(entry{when: s.stepEnd(s.clock.Now().Add(d)), seq: s.seq, sleeper: sl})
	s.cond.Broadcast()
	s.mu.Unlock()
	if first {
		s.wake()
	}
	select {
	case <-sl.wake:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		if !sl.woken {
			sl.cancelled = true
			s.parked--
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// Run dispatches due work until ctx ends, then waits for every worker to return. Tasks must end when
// their own contexts (derived from ctx) end.
func (s *Scheduler) Run(ctx context.Context) {
	defer s.wg.Wait()
	defer close(s.done)
	// One timer for the loop's life, reset for each wait: a new one per wait allocated it and its
	// channel at every wakeup of the fleet.
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var due []entry
	for {
		var ok bool
		due, ok = s.popDue(due[:0])
		for i, e := range due {
			s.dispatch(e)
			due[i] = entry{}
		}
		if len(due) > 0 {
			continue
		}
		var fire <-chan time.Time
		if ok {
			// A fake clock may move between here and the timer, making it fire late; WaitIdle kicks
			// the loop when it sees work due, so nothing waits on such a timer.
			s.mu.Lock()
			wait := s.queue.peek().when.Sub(s.clock.Now())
			s.mu.Unlock()
			if timer == nil {
				timer = s.clock.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-fire:
		}
		if fire != nil && !timer.Stop() {
			// A fake timer that fired while the kick won keeps its value; drop it so that the
			// next wait does not end at once. Go's own timers keep none after Stop.
			select {
			case <-fire:
			default:
			}
		}
	}
}

// Release ends the work in flight of an InlineTask whose RunInline returned true.
func (s *Scheduler) Release() {
	s.mu.Lock()
	s.busy--
	s.cond.Broadcast()
	s.mu.Unlock()
}

// Runs returns how many tasks have run, on a worker or inline, whether or not they sent anything.
func (s *Scheduler) Runs() uint64 { return s.runs.Load() }

// Workers returns the most worker goroutines there were at once: the peak concurrency of the work.
func (s *Scheduler) Workers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// maxIdleWorkers is how many idle workers wait for work; others exit. A burst of hung requests (a
// partition of thousands of nodes) parks a worker each: once it heals, the pool shrinks back instead
// of keeping thousands of goroutines and their grown stacks for the rest of the run.
const maxIdleWorkers = 64

func (s *Scheduler) push(e entry) {
	e.when = s.stepEnd(e.when)
	s.mu.Lock()
	s.seq++
	e.seq = s.seq
	first := s.queue.push(e)
	s.mu.Unlock()
	if first {
		s.wake()
	}
}

// stepEnd is when work due at t runs: at the end of t's step (see Coalesce), or at once if t has
// passed. Without a step it is t, and costs no clock read.
func (s *Scheduler) stepEnd(t time.Time) time.Time {
	if s.coalesce <= 0 || !t.After(s.clock.Now()) {
		return t
	}
	end := t.Truncate(s.coalesce)
	if end.Before(t) {
		end = end.Add(s.coalesce)
	}
	return end
}

// wake makes the dispatcher look at the queue again.
func (s *Scheduler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// popDue removes the entries due now, appending them to due, wakes due sleepers, and says whether
// any entry is left.
func (s *Scheduler) popDue(due []entry) (_ []entry, more bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.cond.Broadcast()
	now := s.clock.Now()
	for s.queue.Len() > 0 {
		if s.queue.peek().when.After(now) {
			return due, true
		}
		e := s.queue.pop()
		if sl := e.sleeper; sl != nil {
			if !sl.cancelled {
				sl.woken = true
				s.parked--
				close(sl.wake)
			}
			continue
		}
		s.busy++
		due = append(due, e)
	}
	return due, false
}

func (s *Scheduler) dispatch(e entry) {
	if t, ok := e.task.(InlineTask); ok && t.RunInline() {
		s.runs.Add(1)
		return
	}
	select {
	case s.runq <- e:
	default:
		s.mu.Lock()
		s.live++
		s.peak = max(s.peak, s.live)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.worker(e)
	}
}

func (s *Scheduler) worker(e entry) {
	defer s.wg.Done()
	for {
		e.task.Run()
		s.runs.Add(1)
		s.mu.Lock()
		s.busy--
		s.cond.Broadcast()
		if s.idle.Load() >= maxIdleWorkers {
			s.live--
			s.mu.Unlock()
			return
		}
		s.idle.Add(1)
		s.mu.Unlock()
		select {
		case e = <-s.runq:
			s.idle.Add(-1)
		case <-s.done:
			return
		}
	}
}

type sleeper struct {
	wake      chan struct{}
	woken     bool // guarded by Scheduler.mu
	cancelled bool // guarded by Scheduler.mu
}
