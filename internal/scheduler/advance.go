package scheduler

import "time"

// SettableClock is the part of k8s.io/utils/clock/testing.FakeClock that Advance drives.
type SettableClock interface {
	Now() time.Time
	SetTime(time.Time)
}

// WaitIdle blocks until no work is due and every started task has finished or is parked in Sleep.
// Only meaningful with a fake clock: with a real one, time moves on while it waits.
func (s *Scheduler) WaitIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		due := s.queue.Len() > 0 && !s.queue.peek().when.After(s.clock.Now())
		if !due && s.busy == s.parked {
			return
		}
		if due {
			s.wake()
		}
		s.cond.Wait()
	}
}

// Advance moves fc, the scheduler's fake clock, forward to until one deadline at a time, and lets all
// work due at each step run until it finishes or parks before the next step. Tests use it to replay
// minutes of heartbeats in the exact order and at the exact times a real clock would produce them.
// Run must be running.
func (s *Scheduler) Advance(fc SettableClock, until time.Time) {
	for {
		s.WaitIdle()
		s.mu.Lock()
		next, ok := time.Time{}, s.queue.Len() > 0
		if ok {
			next = s.queue.peek().when
		}
		s.mu.Unlock()
		if !ok || next.After(until) {
			if until.After(fc.Now()) {
				fc.SetTime(until)
			}
			s.WaitIdle()
			return
		}
		if next.After(fc.Now()) {
			fc.SetTime(next)
		}
	}
}
