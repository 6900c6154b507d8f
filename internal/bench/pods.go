package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/pause"
)

// The pods of a bench with Options.PodsPerNode are a user's: Deployments in a namespace of the
// bench's own, whose ReplicaSets the controller manager fills and whose pods the scheduler places on
// the fleet's nodes, as clusterloader2's density test places its pods.
const (
	PodsNamespace = "fakelet-bench-pods"
	podsLabel     = "fakelet.dev/bench-pods"
	// maxDeploymentReplicas bounds each Deployment, so that the controller manager's ReplicaSet
	// workers (5 by default) share the rollout rather than one ReplicaSet's slow start holding it.
	maxDeploymentReplicas = 1000
)

// PodsResult is a fleet's pods: how they rolled out, and a steady window with all of them.
type PodsResult struct {
	PerNode, Pods, Deployments int // asked for: per node and in all, and the Deployments holding them
	AllRunning                 bool
	Err                        string // why not every pod was Running
	// Created, Bound and Running count the pods seen; the Last times are from the first
	// Deployment's creation to the last pod created (its creationTimestamp, to the second), first
	// seen bound to a node and first seen Running.
	Created, Bound, Running             int
	LastCreated, LastBound, LastRunning time.Duration
	// MinPerNode and MaxPerNode are the fewest and most pods bound to one node of the fleet.
	MinPerNode, MaxPerNode int
	// Rollout is from the first Deployment's creation until every pod was Running, or the timeout;
	// RolloutCPU the processes' CPU over it.
	Rollout    time.Duration
	RolloutCPU map[string]time.Duration
	// Clients is what the controller manager and the scheduler sent over the rollout, whose
	// client-side rate limits (--kube-api-qps) may bound it.
	Clients map[string]ClientRequests
	// With is the steady window with the pods, after Options.Settle.
	With Result
}

// ClientRequests is a component's requests to the apiserver over a span, from its
// rest_client_requests_total and rest_client_rate_limiter_duration_seconds.
type ClientRequests struct {
	Requests float64
	// Throttled is the seconds its requests waited in its client-side rate limiter, summed over
	// requests: with several workers waiting at once it exceeds the span.
	Throttled float64
}

// ValidatePodsPerNode checks a bench's pods per node: each node has room for MaxPodsPerNode.
func ValidatePodsPerNode(n int) error {
	if n < 0 || n > fleet.MaxPodsPerNode {
		return fmt.Errorf("pods per node must be between 0 and %d (a node's pod capacity), got %d", fleet.MaxPodsPerNode, n)
	}
	return nil
}

// deploymentSizes splits pods over as few Deployments as hold at most max each, their sizes apart by
// at most one.
func deploymentSizes(pods, max int) []int {
	if pods <= 0 {
		return nil
	}
	n := (pods + max - 1) / max
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = pods / n
		if i < pods%n {
			sizes[i]++
		}
	}
	return sizes
}

// benchDeployment is Deployment name of replicas pause pods, each requesting what 110 of fit on a
// node, on the fleet's nodes only (any node with a fleet label: a bench control plane holds one
// fleet) and spread over them as evenly as the scheduler can: fake nodes score alike, and the
// scheduler breaks ties in the same order each time (scenario/workload_objects.go). The pods keep the
// service account token a Deployment's pods get.
func benchDeployment(name string, replicas int) *appsv1.Deployment {
	all := map[string]string{podsLabel: "true"}
	own := map[string]string{podsLabel: "true", podsLabel + "-deployment": name}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	n := int32(replicas)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: PodsNamespace, Labels: all},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: own},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: own},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "pause", Image: fleet.PodImage,
						Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}},
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: fleetname.Label, Operator: corev1.NodeSelectorOpExists}},
						}}},
					}},
					Tolerations: []corev1.Toleration{{Key: fleetname.Label, Operator: corev1.TolerationOpExists}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector: &metav1.LabelSelector{MatchLabels: all},
					}},
				},
			},
		},
	}
}

// podsRun is the pods part of one fleet's measurement, on its control plane.
type podsRun struct {
	o          Options
	nodes      int
	res        Result // the window without pods
	pids       map[string]int
	snapshot   func() (snap, error)
	admin      *rest.Config
	components []controlplane.ComponentState
	metrics    *http.Client
}

func (p podsRun) run(ctx context.Context) (*PodsResult, error) {
	pr := &PodsResult{PerNode: p.o.PodsPerNode, Pods: p.o.PodsPerNode * p.nodes}
	cfg := rest.CopyConfig(p.admin)
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return pr, err
	}
	if err := createPodsNamespace(ctx, cs); err != nil {
		return pr, err
	}
	sizes := deploymentSizes(pr.Pods, maxDeploymentReplicas)
	pr.Deployments = len(sizes)
	fmt.Fprintf(p.o.Log, "   pods: %d Deployments of %d pods in all (%d a node) in namespace %s, at most %v until all Running\n",
		len(sizes), pr.Pods, pr.PerNode, PodsNamespace, p.o.PodsTimeout)
	before, err := p.snapshot()
	if err != nil {
		return pr, err
	}
	clientsBefore := p.scrapeClients()
	start := time.Now()
	for i, size := range sizes {
		if _, err := cs.AppsV1().Deployments(PodsNamespace).Create(ctx, benchDeployment(fmt.Sprintf("pods-%d", i), size), metav1.CreateOptions{}); err != nil {
			return pr, fmt.Errorf("create Deployment pods-%d: %w", i, err)
		}
	}
	r := newRollout(pr.Pods, start, time.Now)
	err = watchPods(ctx, cs, PodsNamespace, podsLabel+"=true", start.Add(p.o.PodsTimeout), r.see)
	if err != nil {
		return pr, fmt.Errorf("watch the bench's pods until all are Running: %w", err)
	}
	after, err := p.snapshot()
	if err != nil {
		return pr, err
	}
	r.fill(pr, p.nodes)
	pr.Rollout = after.at.Sub(start)
	pr.RolloutCPU = map[string]time.Duration{}
	for name := range p.pids {
		pr.RolloutCPU[name] = after.cpu[name] - before.cpu[name]
	}
	pr.Clients = map[string]ClientRequests{}
	for name, a := range p.scrapeClients() {
		b := clientsBefore[name]
		pr.Clients[name] = ClientRequests{Requests: a.Requests - b.Requests, Throttled: a.Throttled - b.Throttled}
	}
	fmt.Fprintf(p.o.Log, "   pods: %s; settling %v, then measuring %v with them\n", pr.rolledOut(), p.o.Settle, p.o.Steady)
	if err := pause.For(ctx, p.o.Settle); err != nil {
		return pr, err
	}
	pr.With = Result{Nodes: p.res.Nodes, Footprint: p.res.Footprint, AllReady: p.res.AllReady, Register: p.res.Register}
	return pr, steadyWindow(ctx, &pr.With, p.pids, p.snapshot, p.o.Steady)
}

// createPodsNamespace creates the bench's namespace and waits for its default ServiceAccount,
// without which the ReplicaSets' pods are refused at admission and retried after a backoff that
// would count in the rollout.
func createPodsNamespace(ctx context.Context, cs kubernetes.Interface) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PodsNamespace, Labels: map[string]string{podsLabel: "true"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", PodsNamespace, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(PodsNamespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s has no default ServiceAccount: %w", PodsNamespace, err)
	}
	return nil
}

// scrapeClients reads the controller manager's and the scheduler's client requests; a component
// that cannot be scraped is left out, and so is its row.
func (p podsRun) scrapeClients() map[string]ClientRequests {
	out := map[string]ClientRequests{}
	for _, c := range p.components {
		if c.Name != controlplane.ControllerManager && c.Name != controlplane.Scheduler {
			continue
		}
		f, err := scrape(p.metrics, c.MetricsURL)
		if err != nil {
			fmt.Fprintf(p.o.Log, "   scrape %s: %v\n", c.Name, err)
			continue
		}
		out[c.Name] = ClientRequests{
			Requests:  f.sum("rest_client_requests_total", nil),
			Throttled: f.histogramSum("rest_client_rate_limiter_duration_seconds", nil),
		}
	}
	return out
}

// rollout follows the bench's pods from their creation to Running.
type rollout struct {
	want  int
	start time.Time
	now   func() time.Time
	pods  map[types.UID]*podSeen
	// the counts and the latest times since start of what podSeen records
	created, bound, running             int
	lastCreated, lastBound, lastRunning time.Duration
	perNode                             map[string]int
}

type podSeen struct{ bound, running bool }

func newRollout(want int, start time.Time, now func() time.Time) *rollout {
	return &rollout{want: want, start: start, now: now, pods: map[types.UID]*podSeen{}, perNode: map[string]int{}}
}

// see records what pod shows for the first time and says whether every pod wanted is Running.
func (r *rollout) see(pod *corev1.Pod) bool {
	s := r.pods[pod.UID]
	if s == nil {
		s = &podSeen{}
		r.pods[pod.UID] = s
		r.created++
		r.lastCreated = max(r.lastCreated, pod.CreationTimestamp.Sub(r.start))
	}
	if !s.bound && pod.Spec.NodeName != "" {
		s.bound = true
		r.bound++
		r.lastBound = r.now().Sub(r.start)
		r.perNode[pod.Spec.NodeName]++
	}
	if !s.running && pod.Status.Phase == corev1.PodRunning {
		s.running = true
		r.running++
		r.lastRunning = r.now().Sub(r.start)
	}
	return r.running >= r.want
}

// fill writes what the rollout saw into pr, for a fleet of nodes.
func (r *rollout) fill(pr *PodsResult, nodes int) {
	pr.Created, pr.Bound, pr.Running = r.created, r.bound, r.running
	pr.LastCreated, pr.LastBound, pr.LastRunning = max(r.lastCreated, 0), r.lastBound, r.lastRunning
	pr.AllRunning = r.running >= r.want
	if !pr.AllRunning {
		pr.Err = fmt.Sprintf("%d of %d pods Running (%d created, %d bound) within the timeout", r.running, r.want, r.created, r.bound)
	}
	pr.MinPerNode, pr.MaxPerNode = 0, 0
	for _, n := range r.perNode {
		pr.MaxPerNode = max(pr.MaxPerNode, n)
	}
	if len(r.perNode) >= nodes {
		pr.MinPerNode = pr.MaxPerNode
		for _, n := range r.perNode {
			pr.MinPerNode = min(pr.MinPerNode, n)
		}
	}
}

// rolledOut says how the rollout ended, for the log.
func (pr *PodsResult) rolledOut() string {
	if !pr.AllRunning {
		return pr.Err
	}
	return fmt.Sprintf("all %d Running after %v (last created at %v, last bound at %v)", pr.Running,
		pr.LastRunning.Round(time.Second), pr.LastCreated.Round(time.Second), pr.LastBound.Round(time.Second))
}
