package profiles

import (
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Workloads are the objects a run creates for its nodes to run, in a namespace of its own, at a rate,
// once its nodes are Ready and its first phase begins; it deletes them (and only them) at the end.
type Workloads struct {
	// Rate is how many objects a second the run creates: the namespace, each workload and each
	// Service count one. Default 5.
	Rate *float64 `json:"rate,omitempty" yaml:"rate"`
	// Items are the workloads, created in order.
	Items []Workload `json:"items" yaml:"items"`
}

// WorkloadKind is the kind of object a workload is.
type WorkloadKind string

const (
	KindDeployment WorkloadKind = "Deployment"
	KindJob        WorkloadKind = "Job"
	KindDaemonSet  WorkloadKind = "DaemonSet"
)

// Spread says how a workload's pods are spread over the fleet: by topologySpreadConstraints with
// maxSkew 1 and ScheduleAnyway, so that an outage can still move them onto fewer nodes; zone spreads
// over the nodes of each zone too.
type Spread string

const (
	SpreadNone Spread = ""
	SpreadZone Spread = "zone"
	SpreadNode Spread = "node"
)

// Workload is count objects of one kind, each with the same pods.
type Workload struct {
	// Name names the object, or with count above 1 the objects NAME-0 .. NAME-(count-1).
	Name string       `json:"name" yaml:"name"`
	Kind WorkloadKind `json:"kind" yaml:"kind"`
	// Count is how many objects; default 1.
	Count int `json:"count,omitempty" yaml:"count"`
	// Replicas (a Deployment's replicas, a Job's parallelism and completions), or ReplicasPerNode
	// times the fleet's size, rounded, at least 1: one of the two for a Deployment or a Job, neither
	// for a DaemonSet (one pod on every node).
	Replicas        *int     `json:"replicas,omitempty" yaml:"replicas"`
	ReplicasPerNode *float64 `json:"replicasPerNode,omitempty" yaml:"replicasPerNode"`
	// Requests are each pod's resource requests (and limits: Guaranteed pods).
	Requests Requests `json:"requests,omitempty" yaml:"requests"`
	Spread   Spread   `json:"spread,omitempty" yaml:"spread"`
	// Image is the containers' image; default registry.k8s.io/pause:3.10.
	Image string `json:"image,omitempty" yaml:"image"`
	// Service, for a Deployment, adds a ClusterIP Service selecting its pods; default true.
	Service *bool `json:"service,omitempty" yaml:"service"`
	// TolerationSeconds, if set, is how long the pods tolerate the not-ready and unreachable
	// NoExecute taints; unset, the apiserver's DefaultTolerationSeconds gives them 300 s.
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty" yaml:"tolerationSeconds"`
	// RunFor, for a Job, is how long each pod runs before it succeeds; default 30s.
	RunFor *Duration `json:"runFor,omitempty" yaml:"runFor"`
}

// Requests are a pod's resource requests, as Kubernetes quantities.
type Requests struct {
	CPU    string `json:"cpu,omitempty" yaml:"cpu"`
	Memory string `json:"memory,omitempty" yaml:"memory"`
}

// Defaults of a workload.
const (
	defaultWorkloadRate  = 5
	DefaultWorkloadImage = "registry.k8s.io/pause:3.10"
	defaultJobRunFor     = 30 * time.Second
)

// Bounds of a workload's fields: beyond them a value is a typo.
const (
	maxWorkloadRate  = 1000
	maxWorkloadCount = 1000
	// maxWorkloadName leaves room in 63 characters for "-NNN" and the ReplicaSet's and pod's
	// suffixes (a Deployment's pod is NAME-<10>-<5>).
	maxWorkloadName = 40
)

// NodeAllocatable is what one node of the fleet offers pods.
type NodeAllocatable struct {
	MilliCPU int64
	Memory   int64 // bytes
	Pods     int64
}

// DefaultNodeAllocatable is a fake node's allocatable (agent.DefaultAllocatable: 8 cores, 32777008Ki,
// 110 pods); profiles cannot import agent, and a test of package scenario holds the two equal.
var DefaultNodeAllocatable = NodeAllocatable{MilliCPU: 8000, Memory: 32777008 * 1024, Pods: maxPodsPerNode}

// ObjectName is the name of the k-th object of w.
func (w *Workload) ObjectName(k int) string {
	if w.Count <= 1 {
		return w.Name
	}
	return fmt.Sprintf("%s-%d", w.Name, k)
}

// HasService says whether each of w's objects comes with a Service.
func (w *Workload) HasService() bool {
	return w.Kind == KindDeployment && (w.Service == nil || *w.Service)
}

// Objects counts what the run creates for ws: the namespace, each workload, each Service.
func (ws *Workloads) Objects() int {
	if ws == nil {
		return 0
	}
	n := 1
	for i := range ws.Items {
		w := &ws.Items[i]
		n += max(w.Count, 0)
		if w.HasService() {
			n += max(w.Count, 0)
		}
	}
	return n
}

// CreationTime is how long creating every object takes at the rate: the last one is created then.
func (ws *Workloads) CreationTime() time.Duration {
	if ws == nil || ws.Rate == nil || !(*ws.Rate > 0) {
		return 0
	}
	return churnOffset(ws.Objects()-1, *ws.Rate)
}

func (ws *Workloads) setDefaults() {
	if ws == nil {
		return
	}
	if ws.Rate == nil {
		r := float64(defaultWorkloadRate)
		ws.Rate = &r
	}
	for i := range ws.Items {
		w := &ws.Items[i]
		if w.Count == 0 {
			w.Count = 1
		}
		if w.Image == "" {
			w.Image = DefaultWorkloadImage
		}
		if w.Kind == KindJob && w.RunFor == nil {
			w.RunFor = &Duration{defaultJobRunFor}
		}
	}
}

const workloadsPath = "spec.workloads"

func (s *Spec) validateWorkloads(ps *problems) {
	ws := s.Workloads
	if ws == nil {
		return
	}
	if r := ws.Rate; r != nil && !(*r > 0 && *r <= maxWorkloadRate) {
		ps.addf(joinPath(workloadsPath, "rate"), "must be more than 0 and at most %d objects per second, got %v", maxWorkloadRate, *r)
	}
	items := joinPath(workloadsPath, "items")
	if len(ws.Items) == 0 {
		ps.addf(items, "lists no workload: remove spec.workloads or add one")
		return
	}
	seen := map[string]int{}
	for i := range ws.Items {
		path := indexPath(items, i)
		w := &ws.Items[i]
		if first, dup := seen[w.Name]; dup && w.Name != "" {
			ps.addf(joinPath(path, "name"), "%q is already the name of %s[%d]", w.Name, items, first)
		} else {
			seen[w.Name] = i
		}
		w.validate(ps, path)
	}
	if len(s.Phases) > 0 && ws.Rate != nil && *ws.Rate > 0 {
		first := s.Phases[0].Duration.Duration
		if t := ws.CreationTime(); first > 0 && t >= first {
			ps.addf(joinPath(workloadsPath, "rate"), "%d objects at %v per second take %v, which ends after the first phase (%s, %v): "+
				"the workloads are created during it", ws.Objects(), *ws.Rate, t, s.Phases[0].Name, first)
		}
	}
}

func (w *Workload) validate(ps *problems, path string) {
	switch {
	case w.Name == "":
		ps.addf(joinPath(path, "name"), "is required")
	case len(w.Name) > maxWorkloadName:
		ps.addf(joinPath(path, "name"), "%q is longer than %d characters, which leaves no room for the names of its pods", w.Name, maxWorkloadName)
	default:
		if errs := validation.IsDNS1123Label(w.Name); len(errs) > 0 {
			ps.addf(joinPath(path, "name"), "%q is not a valid name: %s", w.Name, strings.Join(errs, "; "))
		}
	}
	replicated := true
	switch w.Kind {
	case KindDeployment, KindJob:
	case KindDaemonSet:
		replicated = false
	case "":
		ps.addf(joinPath(path, "kind"), "is required (%s, %s or %s)", KindDeployment, KindJob, KindDaemonSet)
		return
	default:
		ps.addf(joinPath(path, "kind"), "must be %s, %s or %s, got %q", KindDeployment, KindJob, KindDaemonSet, w.Kind)
		return
	}
	if w.Count < 1 || w.Count > maxWorkloadCount {
		ps.addf(joinPath(path, "count"), "must be between 1 and %d, got %d", maxWorkloadCount, w.Count)
	}
	switch {
	case !replicated && w.Replicas != nil:
		ps.addf(joinPath(path, "replicas"), "a DaemonSet runs one pod on every node: it takes no replicas")
	case !replicated && w.ReplicasPerNode != nil:
		ps.addf(joinPath(path, "replicasPerNode"), "a DaemonSet runs one pod on every node: it takes no replicasPerNode")
	case replicated && w.Replicas != nil && w.ReplicasPerNode != nil:
		ps.addf(path, "sets replicas and replicasPerNode: set one")
	case replicated && w.Replicas == nil && w.ReplicasPerNode == nil:
		ps.addf(path, "a %s needs replicas or replicasPerNode", w.Kind)
	case w.Replicas != nil && (*w.Replicas < 1 || *w.Replicas > maxNodes*maxPodsPerNode):
		ps.addf(joinPath(path, "replicas"), "must be between 1 and %d, got %d", maxNodes*maxPodsPerNode, *w.Replicas)
	case w.ReplicasPerNode != nil && !(*w.ReplicasPerNode > 0 && *w.ReplicasPerNode <= maxPodsPerNode):
		ps.addf(joinPath(path, "replicasPerNode"), "must be more than 0 and at most %d (a node's pod capacity), got %v", maxPodsPerNode, *w.ReplicasPerNode)
	}
	for _, q := range []struct{ field, value string }{{"cpu", w.Requests.CPU}, {"memory", w.Requests.Memory}} {
		if q.value == "" {
			continue
		}
		if v, err := resource.ParseQuantity(q.value); err != nil {
			ps.addf(joinPath(joinPath(path, "requests"), q.field), "%q is not a quantity (like 10m for CPU, 16Mi for memory)", q.value)
		} else if v.Sign() < 0 {
			ps.addf(joinPath(joinPath(path, "requests"), q.field), "must not be negative, got %s", q.value)
		}
	}
	switch w.Spread {
	case SpreadNone, SpreadZone, SpreadNode:
	default:
		ps.addf(joinPath(path, "spread"), "must be %s or %s (or unset), got %q", SpreadZone, SpreadNode, w.Spread)
	}
	if w.Image == "" {
		ps.addf(joinPath(path, "image"), "is empty")
	}
	if w.Service != nil && w.Kind != KindDeployment {
		ps.addf(joinPath(path, "service"), "only a Deployment has a Service")
	}
	if t := w.TolerationSeconds; t != nil && (*t < 0 || *t > maxPodTolerationSeconds) {
		ps.addf(joinPath(path, "tolerationSeconds"), "must be between 0 and %d, got %d", maxPodTolerationSeconds, *t)
	}
	switch {
	case w.RunFor != nil && w.Kind != KindJob:
		ps.addf(joinPath(path, "runFor"), "only a Job's pods end: a %s's run until deleted", w.Kind)
	case w.RunFor != nil && w.RunFor.Duration <= 0:
		ps.addf(joinPath(path, "runFor"), "must be more than 0")
	}
}

// PodsOf is how many pods each object of w runs on a fleet of nodes nodes.
func (w *Workload) PodsOf(nodes int) int {
	switch {
	case w.Kind == KindDaemonSet:
		return nodes
	case w.Replicas != nil:
		return *w.Replicas
	case w.ReplicasPerNode != nil:
		return max(1, int(math.Round(*w.ReplicasPerNode*float64(nodes))))
	}
	return 0
}

// request is w's pod's request of one resource, in millicores or bytes (Validate checked it parses).
func (w *Workload) request(value string, milli bool) int64 {
	if value == "" {
		return 0
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return 0
	}
	if milli {
		return q.MilliValue()
	}
	return q.Value()
}

// checkFit refuses workloads whose pods cannot fit the fleet: each workload alone, then all of them
// with the fleet's own pods, against nodes × a node's allocatable (DaemonSets against one node, as
// each of their pods is bound to its own).
func (plan *Plan) checkFit(ps *problems, alloc NodeAllocatable) {
	ws := plan.Profile.Spec.Workloads
	if ws == nil {
		return
	}
	nodes := int64(plan.Nodes)
	podsPerNode := int64(plan.Profile.Spec.PodsPerNode)
	total := fitUse{pods: podsPerNode * nodes}
	perNode := fitUse{pods: podsPerNode} // what every node runs: the fleet's pods and the DaemonSets'
	failed := false                      // a workload does not fit alone: the sums would say it again
	for i := range ws.Items {
		w := &ws.Items[i]
		path := indexPath(joinPath(workloadsPath, "items"), i)
		pods := int64(w.PodsOf(plan.Nodes))
		plan.WorkloadPods = append(plan.WorkloadPods, int(pods))
		cpu, mem := w.request(w.Requests.CPU, true), w.request(w.Requests.Memory, false)
		if why := (fitUse{pods: 1, milliCPU: cpu, memory: mem}).over(alloc, 1); why != "" {
			ps.addf(joinPath(path, "requests"), "one pod of %s does not fit a node: %s", w.Name, why)
			failed = true
			continue
		}
		count := int64(w.Count)
		field := "replicas"
		switch {
		case w.Kind == KindDaemonSet:
			field = "requests"
			perNode.add(fitUse{pods: count, milliCPU: count * cpu, memory: count * mem})
		case w.ReplicasPerNode != nil:
			field = "replicasPerNode"
		}
		// The pods are counted first: once they fit, their CPU and memory, each at most a node's,
		// cannot overflow.
		if why := (fitUse{pods: count * pods}).over(alloc, nodes); why != "" {
			ps.addf(joinPath(path, field), "%s × %d: %s", w.Name, count, why)
			failed = true
			continue
		}
		use := fitUse{pods: count * pods, milliCPU: count * pods * cpu, memory: count * pods * mem}
		if why := use.over(alloc, nodes); why != "" {
			ps.addf(joinPath(path, field), "%s × %d pods: %s", w.Name, count*pods, why)
			failed = true
		}
		total.add(use)
	}
	if failed {
		return
	}
	if why := perNode.over(alloc, 1); why != "" {
		ps.addf(workloadsPath, "on every node, the DaemonSets' pods and spec.podsPerNode's: %s", why)
		return
	}
	if why := total.over(alloc, nodes); why != "" {
		ps.addf(workloadsPath, "all the workloads' pods and spec.podsPerNode's: %s", why)
	}
}

// fitUse is what some pods request in all.
type fitUse struct{ pods, milliCPU, memory int64 }

// add sums, saturating: many workloads that each fit can add up past int64.
func (u *fitUse) add(o fitUse) {
	sat := func(a, b int64) int64 {
		if a > math.MaxInt64-b {
			return math.MaxInt64
		}
		return a + b
	}
	u.pods, u.milliCPU, u.memory = sat(u.pods, o.pods), sat(u.milliCPU, o.milliCPU), sat(u.memory, o.memory)
}

// over says what u asks for beyond nodes nodes of alloc, or "".
func (u fitUse) over(alloc NodeAllocatable, nodes int64) string {
	fleet, allow, have := fmt.Sprintf("%d nodes", nodes), "allow", "have"
	if nodes == 1 {
		fleet, allow, have = "a node", "allows", "has"
	}
	switch {
	case u.pods > alloc.Pods*nodes:
		return fmt.Sprintf("%d pods, and %s %s %d", u.pods, fleet, allow, alloc.Pods*nodes)
	case u.milliCPU > alloc.MilliCPU*nodes:
		return fmt.Sprintf("CPU %s requested, and %s %s %s allocatable", resource.NewMilliQuantity(u.milliCPU, resource.DecimalSI),
			fleet, have, resource.NewMilliQuantity(alloc.MilliCPU*nodes, resource.DecimalSI))
	case u.memory > alloc.Memory*nodes:
		return fmt.Sprintf("memory %s requested, and %s %s %s allocatable", resource.NewQuantity(u.memory, resource.BinarySI),
			fleet, have, resource.NewQuantity(alloc.Memory*nodes, resource.BinarySI))
	}
	return ""
}
