package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

func TestDeploymentSizesSplitThePodsEvenly(t *testing.T) {
	for _, tc := range []struct {
		pods, max int
		want      []int
	}{
		{30000, 1000, nil}, // 30 of 1000, checked below
		{1001, 1000, []int{501, 500}},
		{2999, 1000, []int{1000, 1000, 999}},
		{7, 1000, []int{7}},
		{0, 1000, nil},
	} {
		got := deploymentSizes(tc.pods, tc.max)
		sum := 0
		for _, s := range got {
			sum += s
			if s > tc.max || s < 1 {
				t.Errorf("deploymentSizes(%d, %d) = %v: a Deployment of %d", tc.pods, tc.max, got, s)
			}
		}
		if sum != tc.pods {
			t.Errorf("deploymentSizes(%d, %d) = %v: %d pods in all", tc.pods, tc.max, got, sum)
		}
		if tc.want != nil && !slices.Equal(got, tc.want) {
			t.Errorf("deploymentSizes(%d, %d) = %v, want %v", tc.pods, tc.max, got, tc.want)
		}
	}
	if got := deploymentSizes(30000, 1000); len(got) != 30 {
		t.Errorf("30,000 pods in %d Deployments, want 30", len(got))
	}
}

func TestValidatePodsPerNodeHoldsToANodesCapacity(t *testing.T) {
	for _, n := range []int{0, 1, 30, fleet.MaxPodsPerNode} {
		if err := ValidatePodsPerNode(n); err != nil {
			t.Errorf("%d pods per node refused: %v", n, err)
		}
	}
	for _, n := range []int{-1, fleet.MaxPodsPerNode + 1} {
		if err := ValidatePodsPerNode(n); err == nil || !strings.Contains(err.Error(), "between 0 and 110") {
			t.Errorf("%d pods per node: error %v", n, err)
		}
	}
}

// The Deployment's pods are valid for the apiserver (its selector matches them), stay on fleet nodes,
// spread over all of the bench's pods, and 110 of them fit a fleet node's allocatable.
func TestBenchDeploymentPodsFitAndSpread(t *testing.T) {
	d := benchDeployment("pods-3", 1000)
	tmpl := d.Spec.Template
	if *d.Spec.Replicas != 1000 || d.Namespace != PodsNamespace {
		t.Errorf("replicas %d in %s", *d.Spec.Replicas, d.Namespace)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(tmpl.Labels)) {
		t.Fatalf("selector %v does not match the template's labels %v (%v)", d.Spec.Selector, tmpl.Labels, err)
	}
	if watched, _ := labels.Parse(podsLabel + "=true"); !watched.Matches(labels.Set(tmpl.Labels)) {
		t.Errorf("the rollout's watch does not select the pods: %v", tmpl.Labels)
	}
	spread := tmpl.Spec.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].TopologyKey != corev1.LabelHostname || len(spread[0].LabelSelector.MatchLabels) != 1 {
		t.Errorf("spread %+v, want one over hostnames of every bench pod", spread)
	}
	term := tmpl.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
	if term.Key != fleetname.Label || term.Operator != corev1.NodeSelectorOpExists {
		t.Errorf("node affinity %+v", term)
	}
	cpu := tmpl.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	mem := tmpl.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory]
	cpu.Mul(fleet.MaxPodsPerNode)
	mem.Mul(fleet.MaxPodsPerNode)
	if cpu.Cmp(resource.MustParse("8")) > 0 || mem.Cmp(resource.MustParse("32777008Ki")) > 0 {
		t.Errorf("110 pods request %v CPU and %v memory: more than a node's allocatable", cpu.String(), mem.String())
	}
}

func TestRolloutCountsEachPodOnceAndTheLatestTimes(t *testing.T) {
	start := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	r := newRollout(3, start, clock.Now)
	pod := func(uid, node string, phase corev1.PodPhase, created time.Duration) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), CreationTimestamp: metav1.NewTime(start.Add(created))},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	steps := []struct {
		after time.Duration
		pod   *corev1.Pod
		done  bool
	}{
		{time.Second, pod("a", "", corev1.PodPending, time.Second), false},
		{time.Second, pod("a", "n1", corev1.PodPending, time.Second), false},
		{time.Second, pod("b", "n2", corev1.PodPending, 2*time.Second), false},
		{time.Second, pod("a", "n1", corev1.PodRunning, time.Second), false},
		{time.Second, pod("a", "n1", corev1.PodRunning, time.Second), false}, // seen again: counts once
		{time.Second, pod("c", "n1", corev1.PodRunning, 5*time.Second), false},
		{time.Second, pod("b", "n2", corev1.PodRunning, 2*time.Second), true},
	}
	for i, s := range steps {
		clock.Step(s.after)
		if done := r.see(s.pod); done != s.done {
			t.Fatalf("step %d: done %v, want %v", i, done, s.done)
		}
	}
	var pr PodsResult
	r.fill(&pr, 2)
	if pr.Created != 3 || pr.Bound != 3 || pr.Running != 3 || !pr.AllRunning || pr.Err != "" {
		t.Errorf("created %d, bound %d, Running %d, all %v (%s): want 3 of each", pr.Created, pr.Bound, pr.Running, pr.AllRunning, pr.Err)
	}
	if pr.LastCreated != 5*time.Second || pr.LastBound != 6*time.Second || pr.LastRunning != 7*time.Second {
		t.Errorf("last created %v, bound %v, Running %v; want 5s, 6s, 7s", pr.LastCreated, pr.LastBound, pr.LastRunning)
	}
	if pr.MinPerNode != 1 || pr.MaxPerNode != 2 {
		t.Errorf("pods per node %d-%d, want 1-2", pr.MinPerNode, pr.MaxPerNode)
	}
	// A fleet of three nodes, one of them without a pod.
	r.fill(&pr, 3)
	if pr.MinPerNode != 0 {
		t.Errorf("fewest pods on a node %d, want 0: a node had none", pr.MinPerNode)
	}

	short := newRollout(2, start, clock.Now)
	short.see(pod("a", "", corev1.PodPending, 0))
	short.fill(&pr, 2)
	if pr.AllRunning || pr.Err != "0 of 2 pods Running (1 created, 0 bound) within the timeout" {
		t.Errorf("a rollout short of its pods: all %v, %q", pr.AllRunning, pr.Err)
	}
}

func TestPodsTableGivesTheCostPerRunningPod(t *testing.T) {
	const mib = 1 << 20
	s := time.Second
	without := fleetResult(1000, agent.FootprintKubelet, 60*s, 6*s, 30*s, 100*mib, 600*mib)
	without.FleetHeap, without.FleetGoroutines, without.RenewalP99, without.Load = 50*mib, 140, 10.8, "3.10 2.50 2.00"
	with := fleetResult(1000, agent.FootprintKubelet, 60*s, 9*s, 36*s, 160*mib, 900*mib)
	with.FleetHeap, with.FleetGoroutines, with.RenewalP99, with.Load = 50*mib+30000*1500, 140, 10.9, "4.00 3.00 2.00"
	without.Pods = &PodsResult{
		PerNode: 30, Pods: 30000, Deployments: 30, AllRunning: true,
		Created: 30000, Bound: 30000, Running: 30000,
		LastCreated: 1500 * s, LastBound: 1501 * s, LastRunning: 1503 * s, MinPerNode: 30, MaxPerNode: 30,
		Rollout:    1503 * s,
		RolloutCPU: map[string]time.Duration{Fakelet: 60 * s, controlplane.APIServer: 1503 * s / 2},
		Clients: map[string]ClientRequests{
			controlplane.ControllerManager: {Requests: 30060, Throttled: 6000},
			controlplane.Scheduler:         {Requests: 30060, Throttled: 0},
		},
		With: with,
	}
	var b strings.Builder
	WritePodsTable(&b, []Result{without, fleetResult(500, agent.FootprintHeartbeat, 60*s, s, s, mib, mib)})
	got := b.String()
	hasLines(t, got,
		"| 1000 | kubelet | 30000 | 30 | 1503 s | 1500 / 1501 / 1503 s | 30-30 | 4.0% | 50.0% | 0.0% | 0.0% | 0.0% | 20.0, 6000 s | 20.0, 0 s |",
		"| 1000 | kubelet | 0 | 3.10 2.50 2.00 | 10.0% | 50.0% | 100 MiB | 50 MiB | 140 | 600 MiB | 0.0 ms | 0.00 s / 10.80 s | 0 |",
		"| 1000 | kubelet | 30000 | 4.00 3.00 2.00 | 15.0% | 60.0% | 160 MiB | 93 MiB | 140 | 900 MiB | 0.0 ms | 0.00 s / 10.90 s | 0 |",
		"- 1000 nodes, kubelet footprint: fleet heap 1500 B per pod (at most 2 KiB: met), fleet RSS 2097 B per pod; fleet CPU 2000 µs per pod in the rollout, 0.0017 millicores per pod in the steady window; apiserver RSS 10.2 KiB per pod, its CPU 50% of a core in the rollout; renewal interval p99 10.80 s without the pods, 10.90 s with them",
	)
	if strings.Contains(got, "| 500 |") {
		t.Errorf("a fleet measured without pods has a row:\n%s", got)
	}
}
