package fleet

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"fakelet.dev/fakelet/agent"
)

// boundPodWatch is the heartbeat footprint's pod source, kwok's way: one watch of every pod bound
// to a node (spec.nodeName set), each event handed to the agent of that node, none kept. In the
// kubelet footprint each agent watches its own pods instead (agent/pod_watch.go), as a kubelet does.
//
// It is a client-go Reflector over a store that keeps nothing: the agents hold what they need of
// their pods, and a new list is handed to every agent as the whole of its pods (Agent.ReplacePods),
// so that one that was deleted while the watch was down is found gone.
type boundPodWatch struct {
	reflector *cache.Reflector
	store     *dispatchStore
}

func newBoundPodWatch(client kubernetes.Interface, agentOf func(name string) *agent.Agent, all func() []*agent.Agent) *boundPodWatch {
	selector := fields.OneTermNotEqualSelector("spec.nodeName", "").String()
	pods := client.CoreV1().Pods(corev1.NamespaceAll)
	lw := selectedFieldListWatch(selector, pods.List, pods.Watch)
	s := &dispatchStore{agent: agentOf, all: all}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Pod{}, s,
		cache.ReflectorOptions{Name: "fleet bound pods"})
	return &boundPodWatch{reflector: r, store: s}
}

// start runs the watch until ctx ends and waits for its first list.
func (w *boundPodWatch) start(ctx context.Context, timeout time.Duration) error {
	go w.reflector.RunWithContext(ctx)
	deadline := time.NewTimer(timeout) // the wall clock, the reflector's: a fake fleet clock stands still here
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !w.store.synced.Load() {
		select {
		case <-ctx.Done():
			return nil
		case <-deadline.C:
			return fmt.Errorf("no list of the pods bound to nodes within %v", timeout)
		case <-tick.C:
		}
	}
	return nil
}

// dispatchStore is a cache.Store that hands each pod to its node's agent and keeps nothing.
type dispatchStore struct {
	agent  func(name string) *agent.Agent
	all    func() []*agent.Agent
	synced atomic.Bool
}

func (s *dispatchStore) pod(obj any) *corev1.Pod {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, _ := obj.(*corev1.Pod)
	if p != nil {
		p.ManagedFields = nil
	}
	return p
}

func (s *dispatchStore) Add(obj any) error { return s.Update(obj) }

func (s *dispatchStore) Update(obj any) error {
	if p := s.pod(obj); p != nil {
		if a := s.agent(p.Spec.NodeName); a != nil {
			a.ObservePod(p)
		}
	}
	return nil
}

func (s *dispatchStore) Delete(obj any) error {
	if p := s.pod(obj); p != nil {
		if a := s.agent(p.Spec.NodeName); a != nil {
			a.ForgetPod(p.Namespace, p.Name, p.UID)
		}
	}
	return nil
}

// Replace hands each agent the pods of its node; an agent with none listed has none.
func (s *dispatchStore) Replace(list []any, _ string) error {
	byNode := map[string][]*corev1.Pod{}
	for _, obj := range list {
		if p := s.pod(obj); p != nil {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	for _, a := range s.all() {
		a.ReplacePods(byNode[a.Name()])
	}
	s.synced.Store(true)
	return nil
}

// The store keeps nothing to read back.
func (s *dispatchStore) List() []any                          { return nil }
func (s *dispatchStore) ListKeys() []string                   { return nil }
func (s *dispatchStore) Get(any) (any, bool, error)           { return nil, false, nil }
func (s *dispatchStore) GetByKey(string) (any, bool, error)   { return nil, false, nil }
func (s *dispatchStore) Resync() error                        { return nil }
func (s *dispatchStore) Bookmark(string)                      {}
func (s *dispatchStore) LastStoreSyncResourceVersion() string { return "" }
