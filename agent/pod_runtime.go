package agent

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The fake runtime: what the containers of an admitted pod do, computed from times rather than run.
// Each pod's next transition (a container created, ready, exited, restarted after its backoff) is a
// time the pod loop's one task wakes up for (pods.go); nothing runs per pod or per container.

// The kubelet's container restart backoff (pkg/kubelet/kubelet.go newCrashLoopBackOff, v1.37.2
// defaults; client-go util/flowcontrol Backoff, without jitter): 10 s doubling to 300 s, forgotten
// when a container exits more than twice the maximum after the backoff last moved.
const (
	crashLoopInitial = 10 * time.Second
	crashLoopMax     = 300 * time.Second
	crashLoopReset   = 2 * crashLoopMax
)

// plegRelistPeriod is the kubelet's genericPlegRelistPeriod: a change of a container is seen, and the
// pod's status reported, at the pod's next relist, one second apart from its admission.
const plegRelistPeriod = time.Second

// ctrState is a container's state as its status shows it.
type ctrState uint8

const (
	ctrWaiting ctrState = iota
	ctrRunning
	ctrExited
)

// waitReason is why a waiting container waits.
type waitReason uint8

const (
	waitCreating waitReason = iota
	waitInitializing
	waitCrashLoop
)

// ctrStatus is what a container's status shows; it is copied into the reported view (podView).
type ctrStatus struct {
	state    ctrState
	wait     waitReason
	ready    bool
	started  bool // the container has run since it was last created (status.started)
	restarts int32
	exitCode int32
	backoff  time.Duration // the backoff a CrashLoopBackOff message names
	from, to time.Time     // running since, exited at
	hasLast  bool
	lastCode int32
	lastFrom time.Time
	lastTo   time.Time
}

// ctrPlan is when a container's next steps are due; zero times are not due.
type ctrPlan struct {
	createAt  time.Time // the (re)created container runs from then
	readyAt   time.Time
	endAt     time.Time // it exits then
	restartAt time.Time // its backoff ends then
	// The restart backoff: its current step and when it last moved (flowcontrol's entry).
	backoff      time.Duration
	backoffMoved time.Time
}

// podView is the part of a pod's state its status is made of: the agent reports it, and keeps the
// last view the server accepted, to patch what changed (pod_status.go).
type podView struct {
	phase           corev1.PodPhase
	reason, message string // a rejection's
	startTime       time.Time
	sandbox         bool // PodReadyToStartContainers: the sandbox runs and has its IP
	podIP           string
	conds           uint8                     // bit i: podConditions[i] is True
	condAt          [len(podConditions)]int64 // unix seconds: the status has no finer times
	init, ctrs      []ctrStatus
}

func (v *podView) clone() podView {
	c := *v
	c.init = append([]ctrStatus(nil), v.init...)
	c.ctrs = append([]ctrStatus(nil), v.ctrs...)
	return c
}

func (v *podView) equal(w *podView) bool {
	if v.phase != w.phase || v.reason != w.reason || v.message != w.message || !v.startTime.Equal(w.startTime) ||
		v.sandbox != w.sandbox || v.podIP != w.podIP || v.conds != w.conds || v.condAt != w.condAt ||
		len(v.init) != len(w.init) || len(v.ctrs) != len(w.ctrs) {
		return false
	}
	for i := range v.init {
		if v.init[i] != w.init[i] {
			return false
		}
	}
	for i := range v.ctrs {
		if v.ctrs[i] != w.ctrs[i] {
			return false
		}
	}
	return true
}

// admit starts the pod's runtime at now: its sandbox, then its init containers in turn, then its
// containers.
func (st *podState) admit(now time.Time) {
	st.admittedAt = now
	st.view.phase = corev1.PodPending
	st.view.startTime = now
	st.view.init = make([]ctrStatus, len(st.spec.init))
	st.view.ctrs = make([]ctrStatus, len(st.spec.ctrs))
	st.plans = make([]ctrPlan, len(st.spec.init)+len(st.spec.ctrs))
	for i := range st.view.ctrs {
		if len(st.spec.init) > 0 {
			st.view.ctrs[i].wait = waitInitializing
		}
	}
}

// advance moves the pod's runtime to now under fault, and returns when it next changes (zero:
// never by itself). The sandbox is up from the first relist after admission.
func (st *podState) advance(now time.Time, fault PodFault) time.Time {
	v, s := &st.view, st.spec
	if v.phase == corev1.PodFailed && v.reason != "" || st.terminal {
		return time.Time{}
	}
	var next time.Time
	due := func(t time.Time) bool {
		if t.IsZero() {
			return false
		}
		if !t.After(now) {
			return true
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
		return false
	}
	if !v.sandbox {
		if !due(st.admittedAt.Add(plegRelistPeriod)) {
			return next
		}
		v.sandbox = true
	}
	// Init containers run one after another; a sidecar lets the next start once it runs.
	turn := st.admittedAt
	initDone := true
	for i := range s.init {
		c, p := &v.init[i], &st.plans[i]
		st.step(c, p, &s.init[i], true, turn, now, fault, due)
		if s.init[i].sidecar && c.started || !s.init[i].sidecar && c.state == ctrExited && c.exitCode == 0 {
			turn = maxTime(turn, c.to)
			if s.init[i].sidecar {
				turn = c.from
			}
			continue
		}
		initDone = false
		break
	}
	if initDone {
		for i := range s.ctrs {
			c, p := &v.ctrs[i], &st.plans[len(s.init)+i]
			if c.wait == waitInitializing && c.state == ctrWaiting {
				c.wait = waitCreating
			}
			st.step(c, p, &s.ctrs[i], false, turn, now, fault, due)
		}
	}
	v.phase = st.phase()
	if v.phase == corev1.PodSucceeded || v.phase == corev1.PodFailed {
		// Nothing will run again: the kubelet stops the sandbox, and the pod is done.
		st.terminal, v.sandbox = true, false
		return time.Time{}
	}
	return next
}

// step moves one container to now: created when its turn and pull and start delays are past,
// ready after the ready delay, exited at the end of its run (or at once under a crash fault),
// restarted after the kubelet's backoff if the restart policy says so.
func (st *podState) step(c *ctrStatus, p *ctrPlan, cs *ctrSpec, init bool, turn, now time.Time, fault PodFault, due func(time.Time) bool) {
	s := st.spec
	for range 64 { // a bound on what one call does: a crash loop's restarts are seconds apart
		switch c.state {
		case ctrWaiting:
			if c.wait == waitCrashLoop {
				if !due(p.restartAt) {
					return
				}
				st.restart(c, p)
				continue
			}
			if p.createAt.IsZero() {
				p.createAt = turn.Add(s.timing.ImagePull + s.timing.Start)
			}
			if !due(p.createAt) {
				return
			}
			c.state, c.from, c.started = ctrRunning, p.createAt, true
			if !init || cs.sidecar {
				p.readyAt = p.createAt.Add(s.timing.Ready)
			}
			p.endAt = time.Time{}
			switch ends, run := s.ends(); {
			case fault.Crash:
				p.endAt = p.createAt
			case cs.sleep >= 0:
				p.endAt = p.createAt.Add(cs.sleep)
			case init && !cs.sidecar:
				p.endAt = p.createAt // an init container that is not sleeping is done at once
			case ends:
				p.endAt = p.createAt.Add(run)
			}
		case ctrRunning:
			if fault.Crash && (p.endAt.IsZero() || p.endAt.After(now)) {
				p.endAt = now
			}
			c.ready = !fault.Unready && !p.readyAt.IsZero() && !p.readyAt.After(now)
			if !c.ready && !fault.Unready {
				due(p.readyAt)
			}
			if !due(p.endAt) {
				return
			}
			c.state, c.to, c.ready, c.started = ctrExited, p.endAt, false, false
			c.exitCode = s.exitCode
			if fault.Crash {
				c.exitCode = fault.exitCode()
			}
			if init && !cs.sidecar && c.exitCode == 0 {
				c.ready = true
			}
		case ctrExited:
			if st.deleting || !st.restarts(cs, init, c.exitCode) {
				return
			}
			// doBackOff: the first exit after a quiet spell restarts at once, the next ones after
			// the current step, counted from the exit.
			if p.backoff == 0 || c.to.Sub(p.backoffMoved) > crashLoopReset {
				p.backoff, p.restartAt = 0, c.to
			} else {
				p.restartAt = c.to.Add(p.backoff)
			}
			if p.restartAt.After(c.to) {
				c.hasLast, c.lastCode, c.lastFrom, c.lastTo = true, c.exitCode, c.from, c.to
				c.state, c.wait, c.backoff, c.started = ctrWaiting, waitCrashLoop, p.backoff, false
				continue
			}
			st.restart(c, p)
		}
	}
}

// restart creates the container again once its backoff ended: the backoff takes its next step.
func (st *podState) restart(c *ctrStatus, p *ctrPlan) {
	if p.backoff == 0 {
		p.backoff = crashLoopInitial
	} else {
		p.backoff = min(2*p.backoff, crashLoopMax)
	}
	p.backoffMoved = p.restartAt
	if c.state == ctrExited {
		c.hasLast, c.lastCode, c.lastFrom, c.lastTo = true, c.exitCode, c.from, c.to
	}
	c.restarts++
	c.state, c.wait, c.ready, c.started, c.exitCode = ctrWaiting, waitCreating, false, false, 0
	c.from, c.to = time.Time{}, time.Time{}
	p.createAt = p.restartAt.Add(st.spec.timing.Start) // the image is present now
	p.readyAt, p.endAt = time.Time{}, time.Time{}
}

// restarts is podutil.ContainerShouldRestart: a sidecar always, else the pod's restartPolicy.
func (st *podState) restarts(cs *ctrSpec, init bool, code int32) bool {
	if init && cs.sidecar {
		return true
	}
	switch st.spec.restartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return !init || code != 0
}

// phase is the kubelet's getPhase.
func (st *podState) phase() corev1.PodPhase {
	v := st.view
	for i, c := range v.init {
		if st.spec.init[i].sidecar {
			continue
		}
		if c.state == ctrExited && c.exitCode != 0 && !st.restarts(&st.spec.init[i], true, c.exitCode) {
			return corev1.PodFailed
		}
		if c.state != ctrExited || c.exitCode != 0 {
			return corev1.PodPending
		}
	}
	running, stopped, succeeded, waiting := 0, 0, 0, 0
	for _, c := range v.ctrs {
		switch {
		case c.state == ctrRunning:
			running++
		case c.state == ctrExited:
			stopped++
			if c.exitCode == 0 {
				succeeded++
			}
		case c.hasLast:
			stopped++ // backing off: it terminated before
			if c.lastCode == 0 {
				succeeded++
			}
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case st.terminal:
		if succeeded == len(v.ctrs) {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	}
	for i, c := range v.ctrs {
		if c.state == ctrWaiting || st.restarts(&st.spec.ctrs[i], false, c.exitCode) && !st.deleting {
			return corev1.PodRunning
		}
	}
	if succeeded == len(v.ctrs) {
		return corev1.PodSucceeded
	}
	return corev1.PodFailed
}

// stop ends the containers of a deleted pod at now with code: 0 when they exit on their SIGTERM, as
// pause does (and as the hollow kubelet's fake runtime stops them), 137 when the kubelet killed them
// at the end of the grace period; a container that had exited keeps its code. The pod is then
// terminal.
func (st *podState) stop(now time.Time, code int32) {
	v := &st.view
	kill := func(c *ctrStatus) {
		switch c.state {
		case ctrRunning:
			c.state, c.to, c.exitCode = ctrExited, now, code
		case ctrWaiting:
			if c.hasLast {
				c.state, c.exitCode, c.from, c.to = ctrExited, c.lastCode, c.lastFrom, c.lastTo
			}
		}
		c.ready, c.started = false, false
	}
	for i := range v.init {
		kill(&v.init[i])
		if st.spec.init[i].sidecar || v.init[i].state == ctrExited && v.init[i].exitCode == 0 {
			v.init[i].ready = v.init[i].state == ctrExited && v.init[i].exitCode == 0 && !st.spec.init[i].sidecar
		}
	}
	for i := range v.ctrs {
		kill(&v.ctrs[i])
	}
	st.terminal = true
	v.sandbox = false
	v.phase = st.phase()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// relistAfter is the first relist of the pod at or after t: the pod's relists are a second apart
// from its admission.
func (st *podState) relistAfter(t time.Time) time.Time {
	if !t.After(st.admittedAt) {
		return st.admittedAt
	}
	n := (t.Sub(st.admittedAt) + plegRelistPeriod - 1) / plegRelistPeriod
	return st.admittedAt.Add(n * plegRelistPeriod)
}
