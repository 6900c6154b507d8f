package agent

import "time"

// A kubelet is caught up once its run has reported Ready and every one of its reflectors holds a
// stream past its initial list: what a restart, or a server that broke its watches, takes away, and
// what the report's storms time (measure/storm). The state is a few words per run; only its
// transitions reach the recorder.

// RecoveryRecorder is a Recorder that also wants to know when a node's kubelet loses and regains its
// footing. It is optional: an agent tells the recorders that implement it.
type RecoveryRecorder interface {
	// Disrupted: the node's kubelet was caught up and is no longer: its process ended (stop or
	// restart, cause DisruptedProcess) or one of its watches broke (DisruptedWatch).
	Disrupted(node, cause string, at time.Time)
	// Recovered: the node's kubelet is caught up again: its run reported Ready and holds all its
	// watches. A run's first time counts, whether or not a disruption came before it.
	Recovered(node string, at time.Time)
}

// Causes of a disruption, as recorded.
const (
	DisruptedProcess = "process"
	DisruptedWatch   = "watch"
)

// Disrupted implements RecoveryRecorder.
func (rs Recorders) Disrupted(node, cause string, at time.Time) {
	for _, r := range rs {
		if rr, ok := r.(RecoveryRecorder); ok {
			rr.Disrupted(node, cause, at)
		}
	}
}

// Recovered implements RecoveryRecorder.
func (rs Recorders) Recovered(node string, at time.Time) {
	for _, r := range rs {
		if rr, ok := r.(RecoveryRecorder); ok {
			rr.Recovered(node, at)
		}
	}
}

// recovery is one run's progress towards caught up. Guarded by Agent.mu.
type recovery struct {
	ready    bool // a status patch of this run reported Ready
	unsynced int  // reflectors without a stream past its initial list
	caughtUp bool
}

func (a *Agent) recoveryRecorder() RecoveryRecorder {
	rr, _ := a.cfg.Recorder.(RecoveryRecorder)
	return rr
}

// updateRecovery applies change to r's recovery and tells the recorder if r caught up or fell
// behind. A run that ended tells nothing more: Stop told its end.
func (r *run) updateRecovery(change func(*recovery)) {
	a := r.a
	a.mu.Lock()
	if a.run != r {
		a.mu.Unlock()
		return
	}
	was := r.recovery.caughtUp
	change(&r.recovery)
	now := r.recovery.ready && r.recovery.unsynced == 0
	r.recovery.caughtUp = now
	a.mu.Unlock()
	rr := a.recoveryRecorder()
	if rr == nil || was == now {
		return
	}
	at := a.cfg.Scheduler.Clock().Now()
	if now {
		rr.Recovered(a.name, at)
	} else {
		rr.Disrupted(a.name, DisruptedWatch, at)
	}
}

// reportedReady is a status patch of the run that reported the Node Ready.
func (r *run) reportedReady() {
	r.updateRecovery(func(rc *recovery) { rc.ready = true })
}

// watchSynced and watchLost are a reflector's stream getting past its initial list, and breaking.
func (r *run) watchSynced() { r.updateRecovery(func(rc *recovery) { rc.unsynced-- }) }
func (r *run) watchLost()   { r.updateRecovery(func(rc *recovery) { rc.unsynced++ }) }

// caughtUp reads the recovery of a run that has ended: nothing changes it any more.
func (r *run) caughtUp() bool {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	return r.recovery.caughtUp
}

// ended is the run's end by Stop: a caught-up kubelet is disrupted. Called without Agent.mu, with
// what the run was when it ended.
func (a *Agent) ended(caughtUp bool) {
	if rr := a.recoveryRecorder(); rr != nil && caughtUp {
		rr.Disrupted(a.name, DisruptedProcess, a.cfg.Scheduler.Clock().Now())
	}
}
