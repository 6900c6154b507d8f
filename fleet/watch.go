package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/conditions"
)

// nodeWatch is the one watch on the fleet's Nodes that stands in for every kubelet's own node
// informer: each agent learns from it what the node lifecycle controller changed.
type nodeWatch struct {
	informer cache.SharedIndexInformer
	agent    func(name string) *agent.Agent // the fleet's live agent of that name, or nil

	mu          sync.Mutex
	seen        map[string]nodeState
	ready       int
	schedulable int
	handlers    []func(old, new *corev1.Node)
	handlerMu   sync.RWMutex
	syncTimeout time.Duration
}

func newNodeWatch(client kubernetes.Interface, tmpl *agent.Template, agentOf func(name string) *agent.Agent) *nodeWatch {
	selector := labels.SelectorFromSet(labels.Set{fleetname.Label: tmpl.Fleet}).String()
	nodes := client.CoreV1().Nodes()
	lw := selectedListWatch(selector, nodes.List, nodes.Watch)
	// The wrapper lets a client that cannot stream lists (the fake clientset) say so.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Node{}, 0, cache.Indexers{})
	_ = inf.SetTransform(keepOneNode(tmpl, agentOf))
	w := &nodeWatch{informer: inf, agent: agentOf, seen: map[string]nodeState{}, syncTimeout: time.Minute}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(nil, obj) },
		UpdateFunc: func(old, obj any) { w.observe(old, obj) },
		DeleteFunc: w.forget,
	})
	return w
}

// keepOneNode compacts the Nodes the watch stores and stores the agent's own Node in place of a
// decoding of the same version, whichever of the agent's request and the watch's event came first.
func keepOneNode(tmpl *agent.Template, agentOf func(name string) *agent.Agent) cache.TransformFunc {
	return func(obj any) (any, error) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return obj, nil
		}
		n = tmpl.Compact(n)
		if a := agentOf(n.Name); a != nil {
			return a.Kept(n), nil
		}
		return n, nil
	}
}

// start runs the watch until ctx ends and waits for its first list.
func (w *nodeWatch) start(ctx context.Context) error {
	go w.informer.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, w.syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), w.informer.HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("no list of nodes within %v", w.syncTimeout)
	}
	return nil
}

// OnNode adds a handler called with every change to one of the fleet's Nodes (old is nil when the
// Node first appears). Handlers must not modify the Nodes.
func (w *nodeWatch) OnNode(h func(old, new *corev1.Node)) {
	w.handlerMu.Lock()
	defer w.handlerMu.Unlock()
	w.handlers = append(w.handlers, h)
}

func (w *nodeWatch) observe(oldObj, obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if a := w.agent(n.Name); a != nil {
		a.ObserveNode(n)
	} else {
		return // a node of our fleet run by another process or shard
	}
	now := stateOf(n)
	w.mu.Lock()
	w.count(w.seen[n.Name], -1) // the zero state of a Node not seen before counts nothing
	w.count(now, 1)
	w.seen[n.Name] = now
	w.mu.Unlock()
	old, _ := oldObj.(*corev1.Node)
	w.handlerMu.RLock()
	defer w.handlerMu.RUnlock()
	for _, h := range w.handlers {
		h(old, n)
	}
}

func (w *nodeWatch) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, known := w.seen[n.Name]; known {
		w.count(st, -1)
		delete(w.seen, n.Name)
	}
}

// nodeState is what the watch counts of a Node.
type nodeState struct {
	ready bool
	// schedulable: Ready, and without the node lifecycle controller's not-ready and unreachable
	// taints. A Node registers with not-ready:NoSchedule (the apiserver's NodeTaint admission) and
	// keeps it until the controller sees it Ready, seconds later, at its own pace: until then the
	// scheduler places no pod on it.
	schedulable bool
}

func stateOf(n *corev1.Node) nodeState {
	ready := conditions.NodeReady(n)
	return nodeState{ready: ready, schedulable: ready && !hasControllerTaint(n)}
}

// count adds d to the counts st is in. w.mu must be held.
func (w *nodeWatch) count(st nodeState, d int) {
	if st.ready {
		w.ready += d
	}
	if st.schedulable {
		w.schedulable += d
	}
}

func (w *nodeWatch) counts() (registered, ready, schedulable int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen), w.ready, w.schedulable
}

func hasControllerTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return true
		}
	}
	return false
}
