package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/conditions"
)

// The fleet's pods (Config.PodsPerNode): the fleet creates them with its own credential, as a user or
// a controller would, bound to their node by spec.nodeName (no scheduler involved), once the node
// registered, at Config.PodQPS. Their agents run them as they run any pod bound to their node, from
// their pod source (pod_watch.go): they are one more source of pods, not a path of their own. One
// watch of the fleet's labelled pods counts them and shows them to the OnPod handlers (the
// measurement). The fleet never recreates a pod: one the taint eviction controller deleted stays
// deleted.

// PodImage is the image of the pods' one container. No runtime pulls it.
const PodImage = "registry.k8s.io/pause:3.10"

// podCreateTries bounds the creations of one pod that fail for a reason that may pass (the namespace's
// default ServiceAccount not created yet, a throttled request); the n-th retry waits n seconds.
const podCreateTries = 5

// PodName is the name of the i-th pod of node.
func PodName(node string, i int) string { return node + "-" + strconv.Itoa(i) }

// podSet is the fleet's pods: the creation queue, the UIDs created, and the watch.
type podSet struct {
	f        *Fleet
	informer cache.SharedIndexInformer
	limit    *rate.Limiter

	mu      sync.Mutex
	queue   []podToCreate
	active  bool                 // the creator task is scheduled or running
	queued  map[string]bool      // nodes whose pods were queued
	created map[string]types.UID // pod name -> the UID of the pod the fleet created (or adopted)
	ready   map[string]bool      // pod name -> Ready, for the created pods the watch saw
	readyN  int
	failed  int
	lastErr error

	handlerMu sync.RWMutex
	handlers  []func(old, new *corev1.Pod)
}

type podToCreate struct {
	node  string
	i     int
	tries int
}

func newPodSet(f *Fleet) *podSet {
	p := &podSet{
		f:       f,
		limit:   f.limiter(f.cfg.PodQPS),
		queued:  map[string]bool{},
		created: map[string]types.UID{},
		ready:   map[string]bool{},
	}
	selector := labels.SelectorFromSet(labels.Set{fleetname.Label: f.cfg.Fleet}).String()
	pods := f.admin.CoreV1().Pods(fleetname.PodNamespace)
	lw := selectedListWatch(selector, pods.List, pods.Watch)
	p.informer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, f.admin), &corev1.Pod{}, 0, cache.Indexers{})
	_ = p.informer.SetTransform(func(obj any) (any, error) {
		if pod, ok := obj.(*corev1.Pod); ok {
			return compactPod(pod, f.cfg.Fleet), nil
		}
		return obj, nil
	})
	_, _ = p.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.observe(nil, obj) },
		UpdateFunc: p.observe,
		DeleteFunc: p.forget,
	})
	return p
}

// start runs the watch until ctx ends and waits for its first list.
func (p *podSet) start(ctx context.Context, timeout time.Duration) error {
	go p.informer.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), p.informer.HasSynced) && ctx.Err() == nil {
		return fmt.Errorf("no list of the fleet's pods in namespace %s within %v", fleetname.PodNamespace, timeout)
	}
	return nil
}

// OnPod adds a handler for every change the fleet's pod watch sees to a pod on one of the fleet's
// nodes of this process: old is nil when the pod first appears, new is nil when it is gone. Handlers
// run on the watch's goroutine and must not modify the pods. Without pods (Config.PodsPerNode 0) there
// is no watch and they are never called. The pods hold what the watch keeps of them (fleetPod): their
// identity, labels, deletion, node, and their Ready and DisruptionTarget conditions.
func (f *Fleet) OnPod(h func(old, new *corev1.Pod)) {
	if f.pods == nil {
		return
	}
	f.pods.handlerMu.Lock()
	defer f.pods.handlerMu.Unlock()
	f.pods.handlers = append(f.pods.handlers, h)
}

// nodeSeen queues the pods of a node the fleet's watch saw for the first time, once.
func (p *podSet) nodeSeen(node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queued[node] {
		return
	}
	p.queued[node] = true
	for i := range p.f.cfg.PodsPerNode {
		p.push(podToCreate{node: node, i: i})
	}
}

// resume starts the creator again if pods are queued: it stops when it finds the fleet not running.
func (p *podSet) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 && !p.active {
		p.active = true
		p.f.sched.After(0, podCreator{p})
	}
}

// podCreator creates the queued pods one by one as the rate limit admits them. It is a scheduler task,
// so that a fake clock paces it as it paces the agents.
type podCreator struct{ p *podSet }

func (c podCreator) Run() {
	p, f := c.p, c.p.f
	for {
		f.mu.Lock()
		ctx := f.runCtx
		closed := f.closed
		f.mu.Unlock()
		p.mu.Lock()
		if len(p.queue) == 0 || closed || ctx == nil || ctx.Err() != nil {
			p.active = false
			p.mu.Unlock()
			return
		}
		now := f.sched.Clock().Now()
		r := p.limit.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			p.mu.Unlock()
			f.sched.After(d, c)
			return
		}
		next := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		if f.liveAgent(next.node) == nil {
			continue // removed meanwhile
		}
		err := p.create(ctx, next.node, next.i)
		if err == nil || ctx.Err() != nil {
			continue
		}
		next.tries++
		if next.tries < podCreateTries && !errors.Is(err, ErrNotOwned) {
			f.sched.After(time.Duration(next.tries)*time.Second, podRetry{p, next})
			continue
		}
		p.mu.Lock()
		p.failed++
		p.lastErr = err
		p.mu.Unlock()
	}
}

// podRetry queues a pod whose creation failed again, after a pause.
type podRetry struct {
	p   *podSet
	pod podToCreate
}

func (r podRetry) Run() {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.push(r.pod)
}

// push queues pod for creation. p.mu must be held.
func (p *podSet) push(pod podToCreate) {
	p.queue = append(p.queue, pod)
	if !p.active {
		p.active = true
		p.f.sched.After(0, podCreator{p})
	}
}

// create creates pod i of node, or adopts it if a pod of that name exists with the fleet's label on
// that node (a --keep run before this one left it); any other pod of that name is left alone.
func (p *podSet) create(ctx context.Context, node string, i int) error {
	pods := p.f.admin.CoreV1().Pods(fleetname.PodNamespace)
	pod, err := pods.Create(ctx, p.f.newPod(node, i), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		name := PodName(node, i)
		if pod, err = pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get pod %s/%s: %w", fleetname.PodNamespace, name, err)
		}
		if pod.Labels[fleetname.Label] != p.f.cfg.Fleet || pod.Spec.NodeName != node {
			return fmt.Errorf("pod %s/%s exists and is not fleet %q's pod of node %s: %w", fleetname.PodNamespace, name, p.f.cfg.Fleet, node, ErrNotOwned)
		}
	} else if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", fleetname.PodNamespace, PodName(node, i), err)
	}
	pod.ManagedFields = nil
	p.mu.Lock()
	p.created[pod.Name] = pod.UID
	p.mu.Unlock()
	// The watch may have shown the pod before its UID was known here: an adopted pod already Ready
	// counts as Ready, since nothing may change it again (a kubelet's status manager sends no patch
	// for a pod whose status is already what it would report). Its agent learns of it as of any
	// other pod bound to its node, from its pod source.
	if a := p.f.liveAgent(node); a != nil {
		p.countReady(pod)
	}
	return nil
}

// newPod is pod i of node: one container, bound to the node, labelled with the fleet, tolerating the
// not-ready and unreachable NoExecute taints for Config.PodTolerationSeconds if set (else the
// apiserver's DefaultTolerationSeconds admission adds 300 s). It leaves the service account token to
// the ServiceAccount admission plugin, as a Deployment's pods do: the plugin adds the projected
// token volume, which reads kube-root-ca.crt, so that a kubelet footprint's agent watches that
// ConfigMap in the pods' namespace as a kubelet does.
func (f *Fleet) newPod(node string, i int) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        PodName(node, i),
			Namespace:   fleetname.PodNamespace,
			Labels:      map[string]string{fleetname.Label: f.cfg.Fleet},
			Annotations: map[string]string{fleetname.RunAnnotation: f.cfg.RunID},
		},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "pause", Image: PodImage}},
		},
	}
	if t := f.cfg.PodTolerationSeconds; t != nil {
		for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: t,
			})
		}
	}
	return pod
}

// ours says whether pod is one the fleet created, on a node of this process, and returns its agent.
func (p *podSet) ours(pod *corev1.Pod) (*agent.Agent, bool) {
	a := p.f.liveAgent(pod.Spec.NodeName)
	if a == nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return a, p.created[pod.Name] == pod.UID
}

func (p *podSet) observe(oldObj, obj any) {
	pod, ok := asPod(obj)
	if !ok {
		return
	}
	a, created := p.ours(pod)
	if a == nil {
		return // another process's or shard's node
	}
	if created {
		p.countReady(pod)
	}
	old, _ := asPod(oldObj)
	p.handle(old, pod)
}

// countReady keeps the count of Ready pods among those the fleet created or adopted.
func (p *podSet) countReady(pod *corev1.Pod) {
	ready := conditions.PodReady(pod)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.created[pod.Name] != pod.UID {
		return // gone meanwhile, or another pod of that name
	}
	if was, known := p.ready[pod.Name]; !known || was != ready {
		p.ready[pod.Name] = ready
		switch {
		case ready:
			p.readyN++
		case known:
			p.readyN--
		}
	}
}

func (p *podSet) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := asPod(obj)
	if !ok {
		return
	}
	a, created := p.ours(pod)
	if a == nil {
		return
	}
	if created {
		p.mu.Lock()
		if p.ready[pod.Name] {
			p.readyN--
		}
		delete(p.ready, pod.Name)
		p.mu.Unlock()
	}
	p.handle(pod, nil)
}

func (p *podSet) handle(old, pod *corev1.Pod) {
	p.handlerMu.RLock()
	defer p.handlerMu.RUnlock()
	for _, h := range p.handlers {
		h(old, pod)
	}
}

// counts returns how many of the fleet's pods the watch saw, how many are Ready, and how many could
// not be created.
func (p *podSet) counts() (pods, ready, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready), p.readyN, p.failed
}

// PodCreateErr is why the last pod the fleet gave up creating could not be created, or nil.
func (f *Fleet) PodCreateErr() error {
	if f.pods == nil {
		return nil
	}
	return f.pods.createErr()
}

func (p *podSet) createErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// createdUID returns the UID of the pod named name that the fleet created, if it did.
func (p *podSet) createdUID(name string) (types.UID, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	uid, ok := p.created[name]
	return uid, ok
}

// fleetPod is what the fleet's pod watch keeps of a pod in its store for the run: a few hundred
// bytes where a decoded pod takes kilobytes. The fleet and the OnPod handlers read it as a pod
// (pod).
type fleetPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta // name, namespace, UID, resource version, labels, deletion
	node              string
	ready             bool
	disruption        string // the reason of a DisruptionTarget condition that is True
}

func (p *fleetPod) DeepCopyObject() runtime.Object {
	c := *p
	c.ObjectMeta = *p.ObjectMeta.DeepCopy()
	return &c
}

// fleetLabels holds one label set per fleet: the pods that carry just the fleet's label share it.
var fleetLabels sync.Map // fleet name -> map[string]string

// compactPod is what the watch keeps of p, a pod of fleet.
func compactPod(p *corev1.Pod, fleet string) *fleetPod {
	labels := p.Labels
	if len(labels) == 1 && labels[fleetname.Label] == fleet {
		shared, _ := fleetLabels.LoadOrStore(fleet, map[string]string{fleetname.Label: fleet})
		labels = shared.(map[string]string)
	}
	out := &fleetPod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: labels, DeletionTimestamp: p.DeletionTimestamp},
		node: p.Spec.NodeName, ready: conditions.PodReady(p),
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			out.disruption = c.Reason
		}
	}
	return out
}

// pod is p as a pod: what the watch kept of it, its Ready condition and DisruptionTarget.
func (p *fleetPod) pod() *corev1.Pod {
	ready := corev1.ConditionFalse
	if p.ready {
		ready = corev1.ConditionTrue
	}
	out := &corev1.Pod{ObjectMeta: p.ObjectMeta, Spec: corev1.PodSpec{NodeName: p.node},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
	if p.disruption != "" {
		out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: p.disruption})
	}
	return out
}

// asPod reads an object of the watch as a pod.
func asPod(obj any) (*corev1.Pod, bool) {
	switch o := obj.(type) {
	case *fleetPod:
		return o.pod(), true
	case *corev1.Pod:
		return o, true
	}
	return nil, false
}
