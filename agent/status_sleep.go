package agent

import (
	"time"

	"fakelet.dev/fakelet/heartbeat"
)

// In lease mode the status loop's 10 s tick almost never sends: the status is patched when it
// changes or when the report period (5 minutes and a random delay) expires. While nothing it depends
// on can change, the loop sleeps until the report is due instead of waking at every tick; whatever
// can change the status (SetHealth, SetMode, a newer Node) wakes it. Either way it resumes on its tick
// grid, drawing the jitter of the ticks it slept through in their order, so each request leaves at
// the tick it would have left at had the loop woken at every one.

// statusWake ends a sleep of its loop when the report is due. A sleep ended early by a change leaves
// its wake queued: it finds the loop awake, or asleep until later, and does nothing.
type statusWake struct{ s *statusLoop }

func (w *statusWake) Run() {
	s := w.s
	a := s.r.a
	if s.r.ctx.Err() != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !s.sleeping || a.cfg.Scheduler.Clock().Now().Before(s.wakeAt) {
		return
	}
	s.resumeLocked(s.wakeAt)
}

// next schedules the loop after a tick that ran at now: its next tick, or a sleep until the report is
// due if that comes later and nothing can change before it without waking the loop.
func (s *statusLoop) next(now time.Time) {
	a := s.r.a
	s.due = s.nextTick(now)
	a.mu.Lock()
	defer a.mu.Unlock()
	if at, ok := s.reportDueLocked(); ok && s.due.Before(at) {
		s.sleeping, s.wakeAt = true, at
		a.cfg.Scheduler.At(at, &s.wake)
		return
	}
	a.cfg.Scheduler.At(s.due, s)
}

// nextTick is the tick after one at t: the kubelet's JitterUntil of the update frequency.
func (s *statusLoop) nextTick(t time.Time) time.Time {
	c := s.r.a.cfg
	return t.Add(c.jitter(c.Heartbeat.StatusUpdateFrequency, loopJitter))
}

// reportDueLocked returns when the next tick would send if nothing changed, and whether that is
// known: the last tick found the status unchanged for the Node and health the agent holds now, so
// only the report period can make a tick send. The loop's own fields are its tick's; Agent.mu guards
// the rest.
func (s *statusLoop) reportDueLocked() (time.Time, bool) {
	a := s.r.a
	if !s.registered || s.listerMiss || s.lastReport.IsZero() || a.run != s.r || a.server == nil ||
		a.server != s.unchanged.node || a.health != s.unchanged.health {
		return time.Time{}, false
	}
	report := a.cfg.Heartbeat.StatusReportFrequency
	if a.mode == heartbeat.ModeStatus {
		report = a.cfg.Heartbeat.StatusUpdateFrequency
	}
	if s.delayFor != report {
		return time.Time{}, false
	}
	return s.lastReport.Add(report + s.delay), true
}

// resumeLocked ends the loop's sleep at its first tick at or after t.
func (s *statusLoop) resumeLocked(t time.Time) {
	s.sleeping = false
	for s.due.Before(t) {
		s.due = s.nextTick(s.due)
	}
	s.r.a.cfg.Scheduler.At(s.due, s)
}

// statusMayChangeLocked wakes the run's status loop, if it sleeps, for its first tick from now: what
// its status depends on changed. Called with Agent.mu held.
func (a *Agent) statusMayChangeLocked() {
	if r := a.run; r != nil && r.status.sleeping {
		r.status.resumeLocked(a.cfg.Scheduler.Clock().Now())
	}
}
