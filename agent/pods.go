package agent

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The node's pods: the fleet creates them bound to the node (spec.nodeName) and shows each to its
// agent from one watch of all the fleet's pods (ObservePod, ForgetPod), as it shows the Node. The
// agent plays the kubelet's status manager for them: it reports each pod Running and Ready with a
// pods/status patch (the kubelet's PatchPodStatus), and confirms the deletion of a pod someone
// deleted, as the kubelet does once the containers are stopped. It never creates a pod: an evicted
// pod stays gone.
//
// It costs nothing per heartbeat: the pods are synced by one task per run, scheduled only when
// something happened to them: the run's first status patch (a kubelet that starts reports every
// pod), the node turning Ready again, a new pod, a pod someone else marked not Ready or deleted.

// podSyncPeriod is the kubelet status manager's syncPeriod: a pod whose status someone else changed
// after the agent reported it (the node lifecycle controller marking it not Ready while its view of
// the node is stale) is reported again at most this often, and a failed sync is retried after it.
const podSyncPeriod = 10 * time.Second

// podLoop syncs the node's pods in one life of the kubelet.
type podLoop struct {
	r *run
	c caller
	// Guarded by Agent.mu.
	live bool      // the run's first status patch succeeded: the node is registered and reported
	all  bool      // report every pod at the next sync: the kubelet started or turned Ready
	due  time.Time // when the next sync is scheduled; zero if none is
	last time.Time // when the last sync ran
	// running: a sync is under way. A sync asked for meanwhile (a watch event of the pods it is
	// reporting) runs after it, at rerunAt, never beside it: two syncs of a pod at once would both
	// find it terminated and both send its final DELETE.
	running bool
	rerun   bool
	rerunAt time.Time
}

// ObservePod gives the agent the newest view of one of its pods, from the fleet's watch. The agent
// keeps the pointer and never writes to it; the caller must not either. A pod seen for the first
// time is reported at once; one that fell out of Running and Ready after the agent reported it, at
// the next sync period, as the kubelet's status manager reconciles.
func (a *Agent) ObservePod(p *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old, known := a.pods[p.Name]
	if known && old.UID == p.UID && !newer(p.ResourceVersion, old.ResourceVersion) {
		return
	}
	if a.deleted[p.Name] == p.UID {
		return // its final DELETE is sent: the watch is late, and the status manager is done with it
	}
	if a.pods == nil {
		a.pods = map[string]*corev1.Pod{}
	}
	a.pods[p.Name] = p
	r := a.run
	if r == nil || !r.pods.live || !r.pods.needs(p, a.health) {
		return
	}
	at := r.pods.last.Add(podSyncPeriod)
	if !known || old.UID != p.UID || p.DeletionTimestamp != nil {
		at = time.Time{} // at once
	}
	r.pods.schedule(at)
}

// ForgetPod drops a pod that is gone; uid guards against a newer pod of the same name.
func (a *Agent) ForgetPod(name string, uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.pods[name]; p != nil && p.UID == uid {
		delete(a.pods, name)
	}
	if a.run != nil {
		a.run.podFinished(uid) // the kubelet terminates a pod that is gone
	}
	if a.deleted[name] == uid {
		delete(a.deleted, name)
	}
}

// podDeleted drops a pod whose final DELETE the agent sent (or found done), and ignores what the
// fleet's watch shows of it until the watch sees it gone (ForgetPod).
func (a *Agent) podDeleted(p *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.pods[p.Name]; old != nil && old.UID == p.UID {
		delete(a.pods, p.Name)
	}
	if a.run != nil {
		a.run.podFinished(p.UID)
	}
	if a.deleted == nil {
		a.deleted = map[string]types.UID{}
	}
	a.deleted[p.Name] = p.UID
}

// Pods returns how many pods the agent knows and how many of them are Running and Ready.
func (a *Agent) Pods() (known, ready int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.pods {
		if runningReady(p) {
			ready++
		}
	}
	return len(a.pods), ready
}

// nodeReported is called after each successful status patch of the run: the first one, and one
// that turns the node Ready again, make the agent report every pod.
func (p *podLoop) nodeReported(first, turnedReady bool) {
	a := p.r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	p.live = true
	if first || turnedReady {
		p.all = true
		if len(a.pods) > 0 {
			p.schedule(time.Time{})
		}
	}
}

// schedule makes the next sync happen at at (now if zero or past), unless one is due earlier.
// Agent.mu must be held.
func (p *podLoop) schedule(at time.Time) {
	sched := p.r.a.cfg.Scheduler
	now := sched.Clock().Now()
	if at.Before(now) {
		at = now
	}
	if p.running {
		if !p.rerun || at.Before(p.rerunAt) {
			p.rerun, p.rerunAt = true, at
		}
		return
	}
	if !p.due.IsZero() && !at.Before(p.due) {
		return
	}
	p.due = at
	sched.After(at.Sub(now), p)
}

// needs says whether the agent has something to do for pod: confirm its deletion, or report it
// Running and Ready, which a kubelet whose node is not Ready (its runtime down) does not.
// Agent.mu must be held.
func (p *podLoop) needs(pod *corev1.Pod, h Health) bool {
	return pod.DeletionTimestamp != nil || !h.NotReady && (p.all || !runningReady(pod))
}

// Run is one sync: confirm the deletion of each deleted pod, and report each pod that needs it.
func (p *podLoop) Run() {
	r, a := p.r, p.r.a
	if r.ctx.Err() != nil {
		return
	}
	now := a.cfg.Scheduler.Clock().Now()
	a.mu.Lock()
	if now.Before(p.due) {
		a.mu.Unlock()
		return // left from a schedule done meanwhile: the next sync is due later
	}
	if p.running {
		// Left from an earlier schedule while a sync runs: it runs again after that one.
		p.rerun, p.rerunAt = true, now
		a.mu.Unlock()
		return
	}
	p.running = true
	p.due, p.last = time.Time{}, now
	var todo []*corev1.Pod
	for _, pod := range a.pods {
		if p.needs(pod, a.health) {
			todo = append(todo, pod)
		}
	}
	p.all = false
	a.mu.Unlock()
	slices.SortFunc(todo, func(x, y *corev1.Pod) int { return strings.Compare(x.Name, y.Name) })
	failed := false
	defer func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		p.running = false
		if failed && r.ctx.Err() == nil {
			p.schedule(now.Add(podSyncPeriod))
		}
		if p.rerun {
			p.rerun = false
			p.schedule(p.rerunAt)
		}
	}()
	for _, pod := range todo {
		if r.ctx.Err() != nil {
			return
		}
		var err error
		if pod.DeletionTimestamp != nil && a.kubelet() {
			err = p.terminateAsStatusManager(pod, now)
		} else if pod.DeletionTimestamp != nil {
			if err = p.c.deletePod(pod); err == nil || isGone(err) {
				a.podDeleted(pod)
			}
		} else if a.kubelet() {
			err = p.syncAsStatusManager(pod, now)
		} else {
			var out *corev1.Pod
			if out, err = p.c.patchPodStatus(pod, a.podStatus(pod, now)); err == nil {
				a.ObservePod(out)
			}
		}
		failed = failed || err != nil && !isGone(err)
	}
}

// syncAsStatusManager reports pod as the kubelet's status manager does (kubelet footprint): each
// sync GETs the pod and patches its status against what it got. A pod no kubelet has started yet is
// reported Pending with its container being created first, then the container's Events are
// recorded (its image present: Pulled, Created, Started), and a second sync reports it Running and
// Ready.
func (p *podLoop) syncAsStatusManager(pod *corev1.Pod, now time.Time) error {
	a := p.r.a
	got, err := p.c.getPod(pod)
	if err != nil {
		return err
	}
	if got.UID != pod.UID {
		return nil // another pod of that name: the status manager drops the update
	}
	// SyncPod registers the pod's ConfigMaps and Secrets and mounts its volumes before it starts
	// the containers, at every sync, a restarted kubelet's first included.
	p.r.objects.register(got)
	mounted := p.r.tokens.mount(&p.c, got, now)
	if runningReady(got) {
		a.ObservePod(got) // nothing changed: the status manager sends no patch
		return mounted
	}
	if mounted != nil && got.Status.Phase == corev1.PodPending {
		a.ObservePod(got)
		return mounted // reported Pending already: its containers wait for their volumes
	}
	if got.Status.Phase == "" || got.Status.Phase == corev1.PodPending {
		out, err := p.c.patchPodStatus(got, a.podStatusPending(got, now))
		if err != nil {
			return err
		}
		a.ObservePod(out)
		if mounted != nil {
			return mounted // without its volumes no container starts
		}
		p.r.events.containerEvents(out)
		if got, err = p.c.getPod(out); err != nil {
			return err
		}
	}
	out, err := p.c.patchPodStatus(got, a.podStatus(got, now))
	if err != nil {
		return err
	}
	a.ObservePod(out)
	return mounted
}

// terminateAsStatusManager finishes a deleted pod as the kubelet does (kubelet footprint): a sync
// reports its container stopping (not ready), the next its terminal status, and the last one, which
// finds nothing more to report, deletes it. Each sync GETs the pod first, and patches only what
// changed: a sync that a watch event of the pod's own reports started finds them done.
func (p *podLoop) terminateAsStatusManager(pod *corev1.Pod, now time.Time) error {
	a := p.r.a
	for {
		got, err := p.c.getPod(pod)
		if err != nil {
			return err
		}
		if got.UID != pod.UID {
			return nil
		}
		var status corev1.PodStatus
		switch {
		case got.Status.Phase == corev1.PodSucceeded:
			// SyncTerminatedPod unmounts its volumes and unregisters its ConfigMaps and Secrets,
			// before the status manager's final DELETE.
			a.mu.Lock()
			if a.run == p.r {
				p.r.podFinished(got.UID)
			}
			a.mu.Unlock()
			err := p.c.deletePod(got)
			if err == nil || isGone(err) {
				// The status manager is done with a pod it deleted: what the fleet's watch shows of
				// it later starts no sync.
				a.podDeleted(got)
			}
			return err
		case podReady(got):
			status = a.podStatusStopping(got, now)
		default:
			status = a.podStatusTerminated(got, now)
		}
		if pod, err = p.c.patchPodStatus(got, status); err != nil {
			return err
		}
	}
}

// podReady says whether the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podFinished is the end of a pod in the run: its volumes are unmounted, which forgets its tokens,
// and its ConfigMaps and Secrets unregistered. Agent.mu must be held.
func (r *run) podFinished(uid types.UID) {
	r.objects.unregister(uid)
	r.tokens.drop(uid)
}
