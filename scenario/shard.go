package scenario

import (
	"fmt"
	"time"
)

// Sharded and lockstep runs: each shard of a fleet runs the whole plan's schedule, groups chosen over
// the whole fleet, and applies only the ops on the nodes it owns; with Config.StartAt, every shard
// begins phase 0 at the same wall-clock time.

// owns says whether the op on node index is this runner's to apply.
func (r *Runner) owns(index int) bool { return r.cfg.Shard.Owns(index, r.plan.Nodes) }

// startAtDeadline makes StartAt the end of the wait for Ready nodes.
func (r *Runner) startAtDeadline() {
	if !r.cfg.StartAt.IsZero() {
		r.cfg.ReadyTimeout = max(r.cfg.StartAt.Sub(r.sched.Clock().Now()), 0)
	}
}

// holdForStart says whether the first phase must wait for StartAt, and when to look again: at
// StartAt itself, so that the phases begin as close to it as the scheduler allows.
func (r *Runner) holdForStart(now time.Time) (time.Time, bool) {
	if r.cfg.StartAt.IsZero() || !now.Before(r.cfg.StartAt) {
		return time.Time{}, false
	}
	return r.cfg.StartAt, true
}

// failAtStart ends the run with an error if StartAt came and this fleet's nodes were not all Ready:
// a shard that began its phases anyway would no longer be in step with the others' nodes.
func (r *Runner) failAtStart() bool {
	if r.cfg.StartAt.IsZero() {
		return false
	}
	r.recMu.Lock()
	timedOut, ready := r.rec.ReadyTimedOut, r.rec.Ready
	r.recMu.Unlock()
	if !timedOut {
		return false
	}
	r.err = fmt.Errorf("profile %s: only %d of %d nodes Ready (with their Leases) at --start-at %s: "+
		"start later, or register faster (--register-qps)", r.name, ready, r.nodes, r.cfg.StartAt.Format(time.RFC3339))
	r.logf("%v", r.err)
	r.aborted = true
	r.recMu.Lock()
	r.rec.CutShort = true
	r.recMu.Unlock()
	r.once.Do(func() { close(r.done) })
	return true
}
