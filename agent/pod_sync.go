package agent

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One pod's sync, as the kubelet's pod worker and status manager do it: the runtime moved to now,
// the Events of what changed (kubelet footprint), the status reported if it changed, and for a
// deleted pod its containers stopped, its terminal status and the final DELETE.

// podRecord is an Event about a pod, recorded once Agent.mu is released.
type podRecord struct {
	container   string // "" for the pod itself
	typ, reason string
	message     string
}

// syncPod syncs one pod; all: the kubelet started or turned Ready, and reports every pod whose
// status differs from the server's.
func (p *podLoop) syncPod(st *podState, now time.Time, all bool) error {
	a := p.r.a
	a.mu.Lock()
	if a.pods[podKey{st.namespace, st.name}] != st {
		a.mu.Unlock()
		return nil // gone meanwhile
	}
	var evs []podRecord
	var sandboxReady *podView
	if st.admitted && !st.terminal && st.spec != nil {
		before := st.view.clone()
		next := st.advance(now, a.podFault)
		if !before.sandbox && st.view.sandbox && st.hasReported {
			// A v1.37 kubelet's OnPodSandboxReady: once the sandbox runs, before any container
			// starts, the status manager is given the pod's last status with PodReadyToStartContainers
			// True and reports it (kubelet.go; kubernetes#134460).
			sandboxReady = &before
			sandboxReady.sandbox = true
		}
		if st.view.sandbox && st.view.podIP == "" {
			st.view.podIP = a.nextPodIPLocked(st)
		}
		st.next = time.Time{}
		if !next.IsZero() {
			st.next = st.relistAfter(next)
		}
		evs = st.changeEvents(&before)
	}
	if st.spec != nil && st.spec.badAnnotations != "" && !st.warned {
		st.warned = true
		a.stats.podAnnotationErrors.Add(1)
		evs = append(evs, podRecord{typ: corev1.EventTypeWarning, reason: reasonInvalidAnnotation,
			message: "Ignored annotations that do not parse: " + st.spec.badAnnotations})
	}
	if st.rejection != "" && !st.hasReported {
		evs = append(evs, podRecord{typ: corev1.EventTypeWarning, reason: st.view.reason, message: st.rejection})
	}
	deleting := st.deleting
	a.mu.Unlock()
	if a.kubelet() {
		p.r.events.podEvents(st, evs)
	}
	if deleting {
		return p.terminate(st, now)
	}
	if sandboxReady != nil {
		if err := p.reportView(st, *sandboxReady, now); err != nil {
			return err
		}
	}
	return p.report(st, now, all)
}

// reportView reports v, a status the pod went through before its current one, then puts the
// current one back for the next report.
func (p *podLoop) reportView(st *podState, v podView, now time.Time) error {
	a := p.r.a
	a.mu.Lock()
	cur := st.view
	st.view = v
	a.mu.Unlock()
	err := p.report(st, now, false)
	a.mu.Lock()
	st.view = cur
	a.mu.Unlock()
	return err
}

// terminate finishes a deleted pod: its containers are stopped (Killing), the status manager
// reports them not ready (kubelet footprint), then the terminal status, and deletes the pod with no
// grace period left, on its UID.
func (p *podLoop) terminate(st *podState, now time.Time) error {
	a := p.r.a
	a.mu.Lock()
	var evs []podRecord
	stopping := false
	if !st.terminal && st.spec != nil && !st.stopping {
		st.stopping, stopping = true, true
		st.stopAt = st.deletedAt.Add(st.stopTime())
		for i := range st.view.ctrs {
			c := &st.view.ctrs[i]
			if c.state == ctrRunning {
				evs = append(evs, podRecord{container: st.spec.ctrs[i].name, typ: corev1.EventTypeNormal, reason: reasonKilling,
					message: "Stopping container " + st.spec.ctrs[i].name})
			}
			c.ready = false
		}
	}
	a.mu.Unlock()
	if a.kubelet() {
		p.r.events.podEvents(st, evs)
	}
	if stopping && a.kubelet() {
		if err := p.report(st, now, false); err != nil {
			return err
		}
	}
	a.mu.Lock()
	if !st.terminal && st.spec != nil {
		if st.stopAt.After(now) {
			a.mu.Unlock()
			return nil // the containers have not exited yet: the next sync is at stopAt (wake)
		}
		st.stop(st.stopAt, st.stopCode())
	}
	a.mu.Unlock()
	if err := p.report(st, now, false); err != nil {
		return err
	}
	a.mu.Lock()
	if a.run == p.r {
		p.r.podFinished(st.uid) // SyncTerminatedPod unmounts its volumes before the DELETE
	}
	a.mu.Unlock()
	if a.kubelet() {
		// TerminatePod is one more status update: the status manager GETs the pod, finds nothing
		// left to patch, and deletes it.
		got, err := p.c.getPod(st.ref())
		if err != nil || got.UID != st.uid {
			if err == nil || apierrors.IsNotFound(err) {
				a.podDeleted(st)
				return nil
			}
			return err
		}
	}
	err := p.c.deletePod(st.ref())
	if err == nil || isGone(err) {
		a.podDeleted(st)
	}
	return err
}

// report sends the pod's status if it changed since the server last accepted it (or, with force,
// if it differs from the server's), as the status manager's syncPod does: GET the pod (kubelet
// footprint, or after someone else changed it), then PATCH the difference. The heartbeat footprint
// patches from the status it last reported without the GET.
func (p *podLoop) report(st *podState, now time.Time, force bool) error {
	a := p.r.a
	a.mu.Lock()
	if st.spec == nil || a.pods[podKey{st.namespace, st.name}] != st ||
		st.hasReported && st.view.equal(&st.reported) && !st.stale && !force {
		a.mu.Unlock()
		return nil
	}
	st.settle(now)
	view := st.view.clone()
	var base *corev1.PodStatus
	if !a.kubelet() && !st.stale {
		switch {
		case st.hasReported:
			cur := st.view
			st.view = st.reported
			s := a.podStatus(st, nil)
			st.view = cur
			base = &s
		case st.pending != nil:
			base = &st.pending.Status
		default:
			base = &corev1.PodStatus{}
		}
	}
	running := !st.terminal && !st.deleting
	a.mu.Unlock()
	ref := st.ref()
	var mounted error
	if base == nil {
		got, err := p.c.getPod(ref)
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return statusSyncError{err}
		}
		if got.UID != st.uid {
			return nil // another pod of that name: the status manager drops the update
		}
		if a.kubelet() && running {
			// SyncPod registers the pod's ConfigMaps and Secrets and mounts its volumes at every
			// sync, a restarted kubelet's first included.
			p.r.objects.register(got)
			mounted = p.r.tokens.mount(&p.c, got, now)
		}
		base = &got.Status
	}
	a.mu.Lock()
	status := a.podStatus(st, base)
	a.mu.Unlock()
	patch, err := podStatusPatch(ref, base, status)
	if err != nil {
		return err
	}
	var out *corev1.Pod
	if patch != nil {
		if out, err = p.c.patchPodStatus(ref, patch); err != nil {
			return statusSyncError{err}
		}
	}
	a.mu.Lock()
	if out != nil && out.UID == st.uid && newer(out.ResourceVersion, st.rv) {
		st.rv = out.ResourceVersion // a watch event older than the answer, late, says nothing new
	}
	st.reported, st.hasReported, st.stale = view, true, false
	if !a.kubelet() {
		st.pending = nil
	}
	a.mu.Unlock()
	return mounted
}

// statusSyncError is a failed GET or PATCH of report: the status the server has not accepted is
// sent again at the status manager's next batch (Run).
type statusSyncError struct{ error }

func (e statusSyncError) Unwrap() error { return e.error }

// ref is what the pod's requests name.
func (st *podState) ref() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: st.namespace, Name: st.name, UID: st.uid}}
}

// nextPodIPLocked gives the pod its sandbox's IP: the node's IP for a host-network pod, else the
// next of the node's pod range. Agent.mu must be held.
func (a *Agent) nextPodIPLocked(st *podState) string {
	if st.spec.hostNetwork {
		return a.addresses[0].Address
	}
	cidr := ""
	if a.server != nil {
		cidr = a.server.podCIDROf()
	}
	n := a.podIPs
	a.podIPs++
	return a.podIPFor(cidr, n)
}

// changeEvents are the Events the kubelet records for what changed in the pod's containers since
// before: a container created and started (its image pulled first, or present), one backing off.
func (st *podState) changeEvents(before *podView) []podRecord {
	var evs []podRecord
	each := func(specs []ctrSpec, was, now []ctrStatus) {
		for i := range now {
			c, w, name := &now[i], &was[i], specs[i].name
			if !c.from.IsZero() && !c.from.Equal(w.from) {
				image := specs[i].image
				if c.restarts == 0 && st.spec.timing.ImagePull > 0 {
					d := st.spec.timing.ImagePull
					evs = append(evs, podRecord{name, corev1.EventTypeNormal, reasonPulling, fmt.Sprintf("Pulling image %q", image)},
						podRecord{name, corev1.EventTypeNormal, reasonPulled,
							fmt.Sprintf("Successfully pulled image %q in %s (%s including waiting). Image size: 0 bytes.", image, d, d)})
				} else {
					evs = append(evs, podRecord{name, corev1.EventTypeNormal, reasonPulled, fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", image)})
				}
				// kuberuntime_container.go's texts (v1.37.2); the image one as KubeletEnsureSecretPulledImages has it.
				evs = append(evs, podRecord{name, corev1.EventTypeNormal, reasonCreated, "Container created"},
					podRecord{name, corev1.EventTypeNormal, reasonStarted, "Container started"})
			}
			if c.wait == waitCrashLoop && c.state == ctrWaiting && (w.wait != waitCrashLoop || w.state != ctrWaiting || w.lastTo != c.lastTo) {
				evs = append(evs, podRecord{name, corev1.EventTypeWarning, reasonBackOff,
					fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", name, st.name, st.namespace, st.uid)})
			}
		}
	}
	if len(before.init) == len(st.view.init) {
		each(st.spec.init, before.init, st.view.init)
	}
	if len(before.ctrs) == len(st.view.ctrs) {
		each(st.spec.ctrs, before.ctrs, st.view.ctrs)
	}
	return evs
}

// stopTime is how long the pod's containers take to exit after their SIGTERM: the stop delay its
// annotation asks for, cut at the grace period (the pod's deletionGracePeriodSeconds, else its
// terminationGracePeriodSeconds, at least the kubelet's minimumGracePeriodInSeconds of 2 s), when the
// kubelet kills them.
func (st *podState) stopTime() time.Duration {
	grace := st.spec.grace
	if st.graceLeft > 0 && st.graceLeft < grace {
		grace = st.graceLeft
	}
	g := max(time.Duration(grace)*time.Second, minimumGracePeriod)
	return min(st.spec.stopDelay, g)
}

// stopCode is how the containers exit: 0 on their SIGTERM, 137 when killed at the grace period's end.
func (st *podState) stopCode() int32 {
	if st.spec.stopDelay > 0 && st.stopTime() < st.spec.stopDelay {
		return 137
	}
	return 0
}

// minimumGracePeriod is the kubelet's minimumGracePeriodInSeconds (kuberuntime_container.go).
const minimumGracePeriod = 2 * time.Second
