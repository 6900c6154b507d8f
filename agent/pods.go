package agent

import (
	"errors"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"fakelet.dev/fakelet/internal/conditions"
)

// The node's pods: every pod bound to the node (spec.nodeName), whoever created it. In the kubelet
// footprint the agent's own pod watch shows them (pod_watch.go); in the heartbeat footprint the
// fleet's one watch of all bound pods does (ObservePod, ForgetPod, ReplacePods). The agent is the
// kubelet for them: it admits each as the kubelet does (pod_admit.go), runs its containers in a fake
// runtime (pod_runtime.go) and reports their status as the status manager does (pod_status.go); it
// stops the containers of a pod someone deleted and sends the final DELETE. It never creates a pod:
// an evicted pod stays gone.
//
// It costs nothing per heartbeat: the pods are synced by one task per run, scheduled only when
// something is due: a new or deleted pod, a container's next step, the run's first status patch (a
// kubelet that starts reports every pod), the node turning Ready again, a pod someone else changed.
// A pod's state is what its status is made of, a few hundred bytes; the decoded pod is dropped once
// it is admitted.

// podSyncPeriod is the kubelet status manager's syncPeriod: a pod whose status someone else changed
// after the agent reported it (the node lifecycle controller marking it not Ready while its view of
// the node is stale) is reported again at most this often, and a failed sync is retried after it.
const podSyncPeriod = 10 * time.Second

// podKey names a pod on the node.
type podKey struct{ namespace, name string }

// podState is one pod on the node. Guarded by Agent.mu.
type podState struct {
	namespace, name string
	uid             types.UID
	rv              string
	generation      int64
	created         time.Time // for the admission order
	// pending is the decoded pod until it is admitted (the admission reads its affinity and
	// tolerations) and, in the heartbeat footprint, reported once (the first patch's base).
	pending *corev1.Pod
	spec    *podSpec
	seen    uint32 // the pod list it was last in (ReplacePods)

	admitted   bool
	admittedAt time.Time
	view       podView   // what its status shows now
	plans      []ctrPlan // init containers, then containers
	terminal   bool      // its containers are stopped for good: the view is final
	deleting   bool      // someone deleted it: its containers stop, then the final DELETE
	stopping   bool      // the stopping report (not ready) went out
	deletedAt  time.Time // when the agent saw its deletion
	graceLeft  int64     // its deletionGracePeriodSeconds, when it has one
	stopAt     time.Time // when its containers exit after their SIGTERM
	warned     bool      // its annotations' Warning went out
	rejection  string    // why the kubelet rejected it, for its Warning event

	reported    podView // the last view the server accepted
	hasReported bool
	stale       bool      // the watch showed a status other than the reported one
	staleAt     time.Time // when the status manager's reconcile reports it again
	next        time.Time // when the runtime next changes, on the pod's relist grid; zero: never
	retry       time.Time // a sync of it failed: the next one is due then
	unsynced    bool      // the failure was its status's GET or PATCH: the status manager's next batch retries it
}

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

// ObservePod gives the agent the newest view of a pod bound to its node. The agent reads what it
// needs and keeps the pointer only until the pod is admitted; the caller must not modify it.
func (a *Agent) ObservePod(p *corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.observePodLocked(p)
}

func (a *Agent) observePodLocked(p *corev1.Pod) {
	k := podKey{p.Namespace, p.Name}
	if a.deleted[k] == p.UID {
		return // its final DELETE is sent: the watch is late, and the status manager is done with it
	}
	st := a.pods[k]
	if st != nil && st.uid == p.UID && !newer(p.ResourceVersion, st.rv) {
		st.seen = a.podList
		return
	}
	if st != nil && st.uid != p.UID {
		a.dropPodLocked(st) // replaced: the old one is gone
		st = nil
	}
	at := time.Time{} // at once
	if st == nil {
		st = &podState{namespace: p.Namespace, name: p.Name, uid: p.UID, created: p.CreationTimestamp.Time}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			// Finished before the agent knew it: a kubelet neither admits nor runs it again.
			st.admitted, st.terminal, st.hasReported = true, true, true
		}
		if a.pods == nil {
			a.pods = map[podKey]*podState{}
		}
		a.pods[k] = st
	}
	prevGen := st.generation
	st.rv, st.generation, st.seen = p.ResourceVersion, p.Generation, a.podList
	if !st.admitted || !a.kubelet() && !st.hasReported {
		st.pending = p
	}
	switch {
	case p.DeletionTimestamp != nil:
		if !st.deleting {
			st.deleting, st.deletedAt = true, a.cfg.Scheduler.Clock().Now()
		}
		if g := p.DeletionGracePeriodSeconds; g != nil {
			st.graceLeft = *g
		}
	case st.hasReported && st.admitted && !st.terminal && p.Status.Phase != st.reported.phase ||
		st.hasReported && st.reported.conds>>2&1 == 1 && !conditions.PodReady(p):
		// Someone else changed what the agent reported: the status manager's reconcile puts it
		// back at its next sync period.
		if !st.stale {
			st.stale = true
			st.staleAt = a.podLastSync().Add(podSyncPeriod)
		}
		at = st.staleAt
	case st.admitted && st.generation == prevGen:
		return // the echo of its own report, or a change of nothing it reports
	}
	if r := a.run; r != nil && r.pods.live {
		r.pods.schedule(at)
	}
}

func (a *Agent) podLastSync() time.Time {
	if a.run != nil {
		return a.run.pods.last
	}
	return time.Time{}
}

// ForgetPod drops a pod that is gone; uid guards against a newer pod of the same name.
func (a *Agent) ForgetPod(namespace, name string, uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := podKey{namespace, name}
	if st := a.pods[k]; st != nil && st.uid == uid {
		a.dropPodLocked(st)
	}
	if a.deleted[k] == uid {
		delete(a.deleted, k)
	}
}

// ReplacePods gives the agent every pod now bound to its node, from a watch's new list: those it
// knew that are not listed are gone.
func (a *Agent) ReplacePods(pods []*corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.beginPodListLocked()
	for _, p := range pods {
		a.observePodLocked(p)
	}
	a.endPodListLocked()
}

func (a *Agent) beginPodListLocked() { a.podList++ }

func (a *Agent) endPodListLocked() {
	for _, st := range a.pods {
		if st.seen != a.podList {
			a.dropPodLocked(st)
		}
	}
	clear(a.deleted)
}

// dropPodLocked forgets a pod that is gone: the kubelet terminates it, its volumes are unmounted.
func (a *Agent) dropPodLocked(st *podState) {
	delete(a.pods, podKey{st.namespace, st.name})
	if a.run != nil {
		a.run.podFinished(st.uid)
	}
}

// podDeleted drops a pod whose final DELETE the agent sent (or found done), and ignores what the
// watch shows of it until the watch sees it gone (ForgetPod).
func (a *Agent) podDeleted(st *podState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := podKey{st.namespace, st.name}
	if a.pods[k] == st {
		a.dropPodLocked(st)
	}
	if a.deleted == nil {
		a.deleted = map[podKey]types.UID{}
	}
	a.deleted[k] = st.uid
}

// Pods returns how many pods the agent knows and how many of them it reported Running and Ready.
func (a *Agent) Pods() (known, ready int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.pods {
		if st.hasReported && st.reported.phase == corev1.PodRunning && st.reported.conds>>2&1 == 1 {
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

// wake is when pod next needs a sync; zero if it does not. Agent.mu must be held.
func (p *podLoop) wake(st *podState, h Health) time.Time {
	switch {
	case st.unsynced && !st.next.IsZero() && st.next.Before(st.retry):
		// The status manager retries a failed status write in its next batch: at the next status
		// change on the node, or its sync period. A just bound pod's first GET is often refused (the
		// node authorizer's graph lags the watches); its Running report a relist later goes through.
		return st.next
	case !st.retry.IsZero():
		return st.retry
	case st.deleting && st.stopping && !st.terminal:
		return st.stopAt // its containers are stopping
	case st.deleting:
		return p.last // at once
	case h.NotReady:
		return time.Time{} // a kubelet whose runtime is down reports no pod
	case !st.admitted || !st.hasReported:
		return p.last
	case st.stale:
		return st.staleAt
	case !st.view.equal(&st.reported):
		return p.last
	}
	return st.next
}

// Run is one sync: admit the new pods, move each pod's runtime to now, report what changed, and
// finish the deleted pods.
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
	if !a.health.NotReady {
		a.admitPodsLocked(now)
	}
	var todo, failed []*podState
	all := p.all && !a.health.NotReady
	for _, st := range a.pods {
		if w := p.wake(st, a.health); all || !w.IsZero() && !w.After(now) {
			todo = append(todo, st)
		} else if st.unsynced {
			failed = append(failed, st)
		}
	}
	if len(todo) == 0 {
		failed = nil
	}
	p.all = false
	a.mu.Unlock()
	byName := func(x, y *podState) int {
		return strings.Compare(x.namespace+"/"+x.name, y.namespace+"/"+y.name)
	}
	slices.SortFunc(todo, byName)
	slices.SortFunc(failed, byName)
	defer func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		p.running = false
		if r.ctx.Err() != nil {
			return
		}
		if p.rerun {
			p.rerun = false
			p.schedule(p.rerunAt)
		}
		for _, st := range a.pods {
			if w := p.wake(st, a.health); !w.IsZero() {
				p.schedule(w)
			}
		}
	}()
	sync := func(st *podState, do func() error) {
		err := do()
		a.mu.Lock()
		st.retry, st.unsynced = time.Time{}, false
		if err != nil && !isGone(err) {
			// The pod worker's backoff after a failed sync (a token refused) is its period; the
			// status manager tries an unsynced status again at its next batch.
			st.retry, st.unsynced = now.Add(podSyncPeriod), errors.As(err, new(statusSyncError))
		}
		a.mu.Unlock()
	}
	for _, st := range todo {
		if r.ctx.Err() != nil {
			return
		}
		sync(st, func() error { return p.syncPod(st, now, all) })
	}
	// The status manager's batch that these syncs start sends every status the server has not
	// accepted, those of pods whose last sync failed included; their runtime waits for their own
	// next sync, as their pod workers do.
	for _, st := range failed {
		if r.ctx.Err() != nil {
			return
		}
		sync(st, func() error { return p.report(st, now, false) })
	}
}

// admitPodsLocked admits the pods not admitted yet, in the order of their creation, as
// HandlePodAdditions does. Agent.mu must be held.
func (a *Agent) admitPodsLocked(now time.Time) {
	var use nodeUse
	var fresh []*podState
	for _, st := range a.pods {
		switch {
		case !st.admitted && st.pending != nil && !st.deleting:
			fresh = append(fresh, st)
		case st.admitted && !st.terminal && st.view.reason == "" && st.spec != nil:
			use.take(st.spec)
		}
	}
	if len(fresh) == 0 {
		return
	}
	slices.SortFunc(fresh, func(x, y *podState) int {
		if c := x.created.Compare(y.created); c != 0 {
			return c
		}
		return strings.Compare(x.name, y.name)
	})
	node := a.admissionNode()
	for _, st := range fresh {
		pod := st.pending
		st.spec = compactSpec(pod, a.cfg.Pods)
		st.admitted = true
		if reason, message := admission(pod, st.spec, node, use); reason != "" {
			st.view = podView{phase: corev1.PodFailed, reason: reason, message: "Pod was rejected: " + message, startTime: now}
			st.terminal = true
			st.rejection = message
		} else {
			use.take(st.spec)
			at := now
			if pod.Status.Phase == corev1.PodRunning {
				// Running under another kubelet's life (a run before this one): its containers are
				// found running, as a restarted kubelet finds them.
				at = now.Add(-plegRelistPeriod)
			}
			st.admit(at)
			if t := pod.Status.StartTime; t != nil {
				st.view.startTime = t.Time
			}
		}
		if a.kubelet() || st.terminal {
			st.pending = nil
		}
	}
}

// admissionNode is the Node the kubelet admits pods against: the server's view of it, or, before
// the agent has one, the Node it registers.
func (a *Agent) admissionNode() *corev1.Node {
	if a.server != nil {
		return a.node(a.server)
	}
	return a.cfg.Template.initialNode(a, metav1.Time{}, nil)
}

// podFinished is the end of a pod in the run: its volumes are unmounted, which forgets its tokens,
// and its ConfigMaps and Secrets unregistered. Agent.mu must be held.
func (r *run) podFinished(uid types.UID) {
	if r.kubeletLoops == nil {
		return
	}
	r.objects.unregister(uid)
	r.tokens.drop(uid)
}
