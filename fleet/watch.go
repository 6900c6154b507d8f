package fleet

import (
	"context"
	"fmt"
	"slices"
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
//
// It is a client-go Reflector over a store of its own that keeps no Node: each agent keeps what it
// needs of its own (agent/kept_node.go), and the watch, for each node, only what it counts and what
// its handlers compare the next event with.
type nodeWatch struct {
	reflector *cache.Reflector
	agent     func(name string) *agent.Agent // the fleet's live agent of that name, or nil

	mu          sync.Mutex
	seen        map[string]nodeSeen
	conds       []*[]corev1.NodeCondition // the distinct conditions seen, types and statuses only
	ready       int
	schedulable int
	handlers    []func(old, new *corev1.Node)
	handlerMu   sync.RWMutex
	synced      chan struct{} // closed by the first list
	syncOnce    sync.Once
	syncTimeout time.Duration
}

// nodeSeen is what the watch keeps of a Node: what it counts, and what OnNode's handlers are given
// of it as old on its next change.
type nodeSeen struct {
	state  nodeState
	conds  *[]corev1.NodeCondition // shared by the Nodes of the same (nodeWatch.conds)
	taints []corev1.Taint
}

// maxSharedConditions bounds nodeWatch.conds: Nodes of conditions beyond it keep their own.
const maxSharedConditions = 64

func newNodeWatch(client kubernetes.Interface, tmpl *agent.Template, agentOf func(name string) *agent.Agent) (*nodeWatch, error) {
	selector := labels.SelectorFromSet(labels.Set{fleetname.Label: tmpl.Fleet}).String()
	lw, err := nodeListWatch(client, tmpl, selector)
	if err != nil {
		return nil, err
	}
	w := &nodeWatch{agent: agentOf, seen: map[string]nodeSeen{}, synced: make(chan struct{}), syncTimeout: time.Minute}
	// The wrapper lets a client that cannot stream lists (the fake clientset) say so.
	w.reflector = cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Node{},
		nodeStore{w}, cache.ReflectorOptions{Name: "fleet nodes"})
	return w, nil
}

// start runs the watch until ctx ends and waits for its first list.
func (w *nodeWatch) start(ctx context.Context) error {
	go w.reflector.RunWithContext(ctx)
	deadline := time.NewTimer(w.syncTimeout) // the wall clock, the reflector's: a fake fleet clock stands still here
	defer deadline.Stop()
	select {
	case <-w.synced:
		return nil
	case <-ctx.Done():
		return nil
	case <-deadline.C:
		return fmt.Errorf("no list of nodes within %v", w.syncTimeout)
	}
}

// OnNode adds a handler called with every change to one of the fleet's Nodes. old is nil when the
// Node first appears, and otherwise holds what the watch keeps of the Node before: its name, its
// conditions' types and statuses, and its taints. Handlers must not modify the Nodes.
func (w *nodeWatch) OnNode(h func(old, new *corev1.Node)) {
	w.handlerMu.Lock()
	defer w.handlerMu.Unlock()
	w.handlers = append(w.handlers, h)
}

func (w *nodeWatch) observe(n *corev1.Node) {
	a := w.agent(n.Name)
	if a == nil {
		return // a node of our fleet run by another process or shard
	}
	// What the handlers and the counts read, before the agent keeps n, which no one writes to after.
	now := nodeSeen{state: stateOf(n), taints: n.Spec.Taints}
	w.mu.Lock()
	before, known := w.seen[n.Name]
	w.count(before.state, -1) // the zero state of a Node not seen before counts nothing
	w.count(now.state, 1)
	now.conds = w.sharedConditions(n.Status.Conditions)
	w.seen[n.Name] = now
	w.mu.Unlock()
	var old *corev1.Node
	if known {
		old = &corev1.Node{Spec: corev1.NodeSpec{Taints: before.taints}, Status: corev1.NodeStatus{Conditions: *before.conds}}
		old.Name = n.Name
	}
	w.handlerMu.RLock()
	for _, h := range w.handlers {
		h(old, n)
	}
	w.handlerMu.RUnlock()
	a.ObserveNode(n)
}

// sharedConditions returns conds' types and statuses, shared with every Node's of the same. w.mu
// must be held.
func (w *nodeWatch) sharedConditions(conds []corev1.NodeCondition) *[]corev1.NodeCondition {
	same := func(s []corev1.NodeCondition) bool {
		return slices.EqualFunc(s, conds, func(x, y corev1.NodeCondition) bool { return x.Type == y.Type && x.Status == y.Status })
	}
	for _, s := range w.conds {
		if same(*s) {
			return s
		}
	}
	own := make([]corev1.NodeCondition, len(conds))
	for i, c := range conds {
		own[i] = corev1.NodeCondition{Type: c.Type, Status: c.Status}
	}
	if len(w.conds) < maxSharedConditions {
		w.conds = append(w.conds, &own)
	}
	return &own
}

func (w *nodeWatch) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, known := w.seen[name]; known {
		w.count(st.state, -1)
		delete(w.seen, name)
	}
}

// nodeStore is the cache.ReflectorStore of a nodeWatch.
type nodeStore struct{ w *nodeWatch }

func node(obj any) *corev1.Node {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, _ := obj.(*corev1.Node)
	return n
}

func (s nodeStore) Add(obj any) error { return s.Update(obj) }

func (s nodeStore) Update(obj any) error {
	if n := node(obj); n != nil {
		s.w.observe(n)
	}
	return nil
}

func (s nodeStore) Delete(obj any) error {
	if n := node(obj); n != nil {
		s.w.forget(n.Name)
	}
	return nil
}

// Replace observes each Node listed and forgets those seen before but not listed: they were
// deleted while the watch was down.
func (s nodeStore) Replace(list []any, _ string) error {
	listed := make(map[string]struct{}, len(list))
	for _, obj := range list {
		if n := node(obj); n != nil {
			listed[n.Name] = struct{}{}
			s.w.observe(n)
		}
	}
	s.w.mu.Lock()
	var gone []string
	for name := range s.w.seen {
		if _, ok := listed[name]; !ok {
			gone = append(gone, name)
		}
	}
	s.w.mu.Unlock()
	for _, name := range gone {
		s.w.forget(name)
	}
	s.w.syncOnce.Do(func() { close(s.w.synced) })
	return nil
}

func (s nodeStore) Resync() error { return nil }

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
