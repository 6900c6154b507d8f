// Package workload measures a run's workloads from one watch each of their pods, EndpointSlices and
// Deployments in the run's namespace: the pods' startup latency as the SIG Scalability SLI defines
// it, the scheduler's throughput per phase, and for each op that breaks nodes the workload's
// reaction, step by step, from the op to the Deployment available again. Every change is timestamped
// on arrival on the run's clock; memory is bounded by MaxPods pods of a few events each.
package workload

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/internal/conditions"
	"fakelet.dev/fakelet/internal/headtail"
)

// MaxPods bounds the pods a Recorder follows: 30,000 pods a fleet of 1000 nodes runs, and their
// replacements, fit many times over. Pods past it are counted (Summary.PodsDropped), not followed.
const MaxPods = 200_000

// maxPodEvents bounds the events kept of one pod: a pod's reaction to an outage is a handful; a pod
// that flaps readiness for hours keeps its first ones.
const maxPodEvents = 24

// deploymentTransitionsKept is how many of the first and of the last changes of each Deployment's
// availability are kept.
const deploymentTransitionsKept = 500

// PullDelayAnnotation marks a pod whose image pull the fleet's runtime delays: the SLI leaves image
// pulling out of pod startup, so those pods are left out of its latency.
const PullDelayAnnotation = "fakelet.dev/image-pull-delay"

// WorkloadLabel names the workload object a pod belongs to (scenario.WorkloadLabel).
const WorkloadLabel = "fakelet.dev/workload"

// eventKind is one change of a pod that a reaction is made of.
type eventKind uint8

const (
	evReady eventKind = iota + 1
	evNotReady
	evEndpointReady
	evEndpointNotReady // not ready, or gone from every slice
	evDisrupted        // DisruptionTarget=True: marked for eviction
	evDeleting         // deletionTimestamp set
	evDeleted
)

type podEvent struct {
	at   time.Time
	kind eventKind
}

// podState is what the Recorder knows of one pod.
type podState struct {
	name, workload, node string
	created              time.Time // metadata.creationTimestamp
	firstSeen            time.Time // arrival of its first event
	scheduled            time.Time // arrival of its first event with spec.nodeName
	started              time.Time // its containers' latest state.running.startedAt, when first Running
	running              time.Time // arrival of its first event in phase Running
	old                  bool      // created before the watch began: its startup was not seen
	excluded             bool      // left out of the startup latency: old, or its image pull delayed
	ready                bool
	deleting             bool
	endpoint             int8 // -1 unknown, 0 not ready, 1 ready
	events               []podEvent
}

func (p *podState) add(at time.Time, k eventKind) {
	if len(p.events) < maxPodEvents {
		p.events = append(p.events, podEvent{at, k})
	}
}

// first is the time of the first event of one of kinds at or after t, zero if none.
func (p *podState) first(t time.Time, kinds ...eventKind) time.Time {
	for _, e := range p.events {
		if e.at.Before(t) {
			continue
		}
		for _, k := range kinds {
			if e.kind == k {
				return e.at
			}
		}
	}
	return time.Time{}
}

// Transition is one change of a Deployment's availability.
type Transition struct {
	At        time.Time
	Available bool // availableReplicas at least the spec's replicas
}

type deploymentState struct {
	available   bool
	known       bool
	transitions headtail.Sample[Transition]
}

// breakOp is one action that breaks nodes: when it reached each of its nodes.
type breakOp struct {
	phase, group, op string
	nodes            map[string]time.Time
	first            time.Time
}

// Recorder keeps what the watches saw. Its handlers take the arrival time from its clock.
type Recorder struct {
	clock clock.PassiveClock
	start time.Time // pods created before it are left out of the startup latency

	mu          sync.Mutex
	pods        map[types.UID]*podState
	byName      map[string]types.UID // the latest pod of each name, for the EndpointSlices' targets
	order       []types.UID          // pods in the order first seen
	dropped     int
	deployments map[string]*deploymentState
	breaks      []*breakOp
	breakIndex  map[[3]string]*breakOp
	onStartup   func(Startup)
}

// NewRecorder returns a Recorder on clk; pods created before start are not counted in the startup
// latency (a watch that lists pods created earlier has not seen them start).
func NewRecorder(clk clock.PassiveClock, start time.Time) *Recorder {
	return &Recorder{clock: clk, start: start, pods: map[types.UID]*podState{}, byName: map[string]types.UID{},
		deployments: map[string]*deploymentState{}, breakIndex: map[[3]string]*breakOp{}}
}

// OnStartup sets a callback for each pod's startup as it is first seen Running (for Prometheus). It
// runs on the watch's goroutine, with the Recorder locked, and must be cheap.
func (r *Recorder) OnStartup(f func(Startup)) {
	r.mu.Lock()
	r.onStartup = f
	r.mu.Unlock()
}

// Breaking says whether an op breaks the pods of its node: they stop being served, as after a dead,
// cut-off, not Ready or removed node, or crashing or unready containers.
func Breaking(op string) bool {
	switch op {
	case "stop", "partition", "notReady", "restart", "remove", "crashPods", "unreadyPods":
		return true
	}
	return false
}

// Applied records an op of a profile that took effect on node at at; only breaking ops are kept, the
// first time each reached each node.
func (r *Recorder) Applied(phase, group, op, node string, at time.Time) {
	if !Breaking(op) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := [3]string{phase, group, op}
	b := r.breakIndex[key]
	if b == nil {
		b = &breakOp{phase: phase, group: group, op: op, nodes: map[string]time.Time{}, first: at}
		r.breakIndex[key] = b
		r.breaks = append(r.breaks, b)
	}
	if _, seen := b.nodes[node]; !seen {
		b.nodes[node] = at
	}
	if at.Before(b.first) {
		b.first = at
	}
}

// ObservePod records how pod n differs from old; old is nil when it first appears, n nil when it is
// gone.
func (r *Recorder) ObservePod(old, n *corev1.Pod) {
	at := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if n == nil {
		if old != nil {
			if p := r.pods[old.UID]; p != nil {
				p.add(at, evDeleted)
				if p.endpoint == 1 {
					p.endpoint = 0
				}
			}
		}
		return
	}
	p := r.pods[n.UID]
	if p == nil {
		if len(r.pods) >= MaxPods {
			r.dropped++
			return
		}
		p = &podState{name: n.Name, workload: n.Labels[WorkloadLabel], created: n.CreationTimestamp.Time, firstSeen: at, endpoint: -1}
		_, pulls := n.Annotations[PullDelayAnnotation]
		p.old = p.created.Before(r.start.Truncate(time.Second))
		p.excluded = pulls || p.old
		r.pods[n.UID] = p
		r.order = append(r.order, n.UID)
		r.byName[n.Name] = n.UID
	}
	if n.Spec.NodeName != "" && p.scheduled.IsZero() {
		p.scheduled, p.node = at, n.Spec.NodeName
	}
	if n.Status.Phase == corev1.PodRunning && p.running.IsZero() {
		p.running, p.started = at, startedAt(n)
		if r.onStartup != nil && !p.excluded {
			if s, ok := p.startup(); ok {
				r.onStartup(s)
			}
		}
	}
	if ready := conditions.PodReady(n); ready != p.ready {
		p.ready = ready
		if ready {
			p.add(at, evReady)
		} else {
			p.add(at, evNotReady)
		}
	}
	if disrupted(n) && p.first(time.Time{}, evDisrupted).IsZero() {
		p.add(at, evDisrupted)
	}
	if n.DeletionTimestamp != nil && !p.deleting {
		p.deleting = true
		p.add(at, evDeleting)
	}
}

// ObserveEndpointSlice records the changes of readiness of the pods that slice n (old before it)
// points at; n nil means the slice is gone. A pod whose address leaves a slice counts as not ready.
func (r *Recorder) ObserveEndpointSlice(old, n *discoveryv1.EndpointSlice) {
	at := r.clock.Now()
	before, after := endpoints(old), endpoints(n)
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, ready := range after {
		if was, ok := before[name]; !ok || was != ready {
			r.endpointChanged(at, name, ready)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			r.endpointChanged(at, name, false)
		}
	}
}

func (r *Recorder) endpointChanged(at time.Time, pod string, ready bool) {
	p := r.pods[r.byName[pod]]
	if p == nil || p.name != pod {
		return
	}
	state := int8(0)
	if ready {
		state = 1
	}
	if p.endpoint == state {
		return
	}
	p.endpoint = state
	if ready {
		p.add(at, evEndpointReady)
	} else {
		p.add(at, evEndpointNotReady)
	}
}

// endpoints maps the pods a slice points at to their readiness.
func endpoints(s *discoveryv1.EndpointSlice) map[string]bool {
	if s == nil {
		return nil
	}
	out := make(map[string]bool, len(s.Endpoints))
	for _, e := range s.Endpoints {
		if e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
			continue
		}
		// An endpoint without a ready condition is ready, as EndpointSlice consumers read it.
		out[e.TargetRef.Name] = e.Conditions.Ready == nil || *e.Conditions.Ready
	}
	return out
}

// ObserveDeployment records the changes of a Deployment's availability: all its replicas available
// or not.
func (r *Recorder) ObserveDeployment(_, n *appsv1.Deployment) {
	if n == nil {
		return
	}
	at := r.clock.Now()
	want := int32(1)
	if n.Spec.Replicas != nil {
		want = *n.Spec.Replicas
	}
	available := n.Status.ObservedGeneration >= n.Generation && n.Status.AvailableReplicas >= want
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.deployments[n.Name]
	if d == nil {
		d = &deploymentState{transitions: headtail.Sample[Transition]{Keep: deploymentTransitionsKept}}
		r.deployments[n.Name] = d
	}
	if d.known && d.available == available {
		return
	}
	d.known, d.available = true, available
	d.transitions.Add(Transition{At: at, Available: available})
}

func disrupted(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// startedAt is the latest state.running.startedAt of a pod's containers: when the last of them
// started, as the kubelet reports it. Zero if none reports one.
func startedAt(p *corev1.Pod) time.Time {
	var t time.Time
	for _, c := range p.Status.ContainerStatuses {
		if r := c.State.Running; r != nil && r.StartedAt.After(t) {
			t = r.StartedAt.Time
		}
	}
	return t
}
