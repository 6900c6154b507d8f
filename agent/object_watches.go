package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

// objectWatches is the kubelet's configmap and secret managers with their default change detection
// strategy, Watch (pkg/kubelet/util/manager/watch_based_manager.go, v1.37.2), as the apiserver sees
// them: one reflector per ConfigMap or Secret that a pod on the node references, watching that one
// object (fieldSelector metadata.name=<name> in the pod's namespace). The kubelet registers a pod's
// references at the pod's first sync (SyncPod) and unregisters them once the pod is terminated
// (SyncTerminatedPod), before its final DELETE; an object's watch opens with the first pod that
// references it and closes with the last one. Every pod with a service account token volume
// references kube-root-ca.crt in its namespace, so a kubelet holds one such watch per namespace it
// runs pods in.
//
// The managers also stop the watch of an object no pod sync has read for their maxIdleTime, and
// start it again at the next read. A volume or an image pull secret is read at every sync of its
// pod, about every minute, so only the objects that pods read once (environment variables, the
// secrets of volume plugins other than ConfigMap, Secret and projected) go idle: theirs close a few
// minutes after the last pod that reads them started, and open again when another one starts.
//
// The state is a few words per object; the reflectors are the run's own kind (reflector.go), each
// in a context of its own so that the manager can close it, and not counted in the run's recovery:
// a kubelet's managers open them as its pods sync, not at start. Guarded by Agent.mu.
type objectWatches struct {
	r     *run
	start time.Time                    // the managers' start, which their idle check's ticks follow
	pods  map[types.UID][]podObjectRef // the registered pods and what they reference
	items map[objectRef]*objectWatch
	// recycling: the idle check is scheduled; it is only while an object could go idle.
	recycling bool
}

// objectWatch is the manager's objectCacheItem: one object's watch and who references it.
type objectWatch struct {
	ref        objectRef
	f          *reflector // nil while stopped for idleness
	cancel     context.CancelFunc
	listed     bool // the watch's first list is in (the item's store has synced)
	pods       int  // registered pods that reference it
	everySync  int  // of them, those that read it at every sync
	lastAccess time.Time
}

// The managers' settings (watch_based_manager.go, kubelet.go).
const (
	// objectWatchMinTimeout: the managers' reflectors bump the reflector's minimum watch timeout
	// "to avoid recreating watches too often".
	objectWatchMinTimeout = 30 * 60 // seconds
	// objectMaxIdle is maxIdleTime: five times the kubelet's resync interval (syncFrequency, 1 minute).
	objectMaxIdle = 5 * time.Minute
	// objectRecyclePeriod is how often the managers look for idle watches.
	objectRecyclePeriod = time.Minute
)

// register is the managers' RegisterPod at a pod's sync: the first one adds the pod's references
// and opens the watches of the objects no other pod references; later ones change nothing (a pod's
// volumes, environment and pull secrets cannot change). Every registration is a read of the
// objects, as the sync that follows it mounts the volumes and starts the containers.
func (o *objectWatches) register(pod *corev1.Pod) {
	a := o.r.a
	if !a.kubelet() || a.api.Watches == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.run != o.r || o.r.ctx.Err() != nil {
		return
	}
	if _, ok := o.pods[pod.UID]; ok {
		return
	}
	if o.pods == nil {
		o.pods, o.items = map[types.UID][]podObjectRef{}, map[objectRef]*objectWatch{}
	}
	pr := podObjectRefs(pod)
	o.pods[pod.UID] = pr
	now := a.cfg.Scheduler.Clock().Now()
	idle := false
	for _, ref := range pr {
		w := o.items[ref.objectRef]
		if w == nil {
			w = &objectWatch{ref: ref.objectRef}
			o.items[ref.objectRef] = w
		}
		w.pods++
		if ref.everySync {
			w.everySync++
		}
		w.lastAccess = now
		if w.f == nil {
			o.open(w)
		}
		idle = idle || w.everySync == 0
	}
	o.recycle(idle, now)
}

// unregister is the managers' UnregisterPod once the pod is terminated: the watches of the objects
// no other registered pod references close. Agent.mu must be held.
func (o *objectWatches) unregister(uid types.UID) {
	pr, ok := o.pods[uid]
	if !ok {
		return
	}
	delete(o.pods, uid)
	now := o.r.a.cfg.Scheduler.Clock().Now()
	idle := false
	for _, ref := range pr {
		w := o.items[ref.objectRef]
		if w == nil {
			continue
		}
		w.pods--
		if ref.everySync {
			w.everySync--
			if w.everySync == 0 {
				w.lastAccess = now // the last pod that read it at every sync read it lately
				idle = w.pods > 0
			}
		}
		if w.pods == 0 {
			o.stop(w)
			delete(o.items, ref.objectRef)
		}
	}
	o.recycle(idle, now)
}

// recycle schedules the idle check if an object may go idle and it is not scheduled yet.
func (o *objectWatches) recycle(idle bool, now time.Time) {
	if idle && !o.recycling {
		o.recycling = true
		o.r.a.cfg.Scheduler.After(o.nextTick(now).Sub(now), o)
	}
}

// open starts w's reflector: a streaming list of the one object, then its watch.
func (o *objectWatches) open(w *objectWatch) {
	r := o.r
	path := "/api/v1/namespaces/" + w.ref.namespace + "/" + w.ref.resource
	selector := fields.OneTermEqualSelector("metadata.name", w.ref.name).String()
	f := newReflector(r, w.ref.resource, path, selector, objectWatchMinTimeout, true)
	f.ctx, w.cancel = context.WithCancel(r.ctx)
	f.untracked = true
	f.onListed = func() { o.listed(w, f) }
	w.f, w.listed = f, false
	r.a.cfg.Scheduler.After(0, f)
}

// stop stops w's reflector: its stream ends, and nothing opens it again.
func (o *objectWatches) stop(w *objectWatch) {
	if w.f == nil {
		return
	}
	w.cancel()
	w.f, w.cancel, w.listed = nil, nil, false
}

// listed marks w's store synced once f, its current reflector, has listed.
func (o *objectWatches) listed(w *objectWatch, f *reflector) {
	a := o.r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.f == f {
		w.listed = true
	}
}

// nextTick is the idle check's first tick after now: every objectRecyclePeriod from the start.
func (o *objectWatches) nextTick(now time.Time) time.Time {
	n := now.Sub(o.start)/objectRecyclePeriod + 1
	return o.start.Add(n * objectRecyclePeriod)
}

// Run is the managers' idle check (startRecycleIdleWatch): it stops the watch of each object that
// no sync has read for objectMaxIdle, once its first list is in. It runs only while some object is
// read by no pod at every sync.
func (o *objectWatches) Run() {
	a := o.r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.run != o.r || o.r.ctx.Err() != nil {
		return
	}
	now := a.cfg.Scheduler.Clock().Now()
	again := false
	for _, w := range o.items {
		if w.everySync > 0 || w.f == nil {
			continue
		}
		if w.listed && now.After(w.lastAccess.Add(objectMaxIdle)) {
			o.stop(w)
			continue
		}
		again = true
	}
	o.recycling = again
	if again {
		a.cfg.Scheduler.After(o.nextTick(now).Sub(now), o)
	}
}
