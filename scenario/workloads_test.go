package scenario

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/profiles"
)

const workloadsProfile = `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: wl}
spec:
  nodes: 6
  zones: 3
  groups: {victims: {count: 2}}
  workloads:
    rate: 2
    items:
    - {name: web, kind: Deployment, replicasPerNode: 1, requests: {cpu: 10m, memory: 16Mi}, spread: zone, tolerationSeconds: 30}
    - {name: batch, kind: Job, count: 2, replicas: 3, runFor: 10s}
    - {name: agent, kind: DaemonSet}
  phases:
  - name: steady
    duration: 10s
  - name: faults
    duration: 10s
    actions:
    - {group: victims, do: crashPods, exitCode: 2}
    - {group: victims, do: unreadyPods, at: 2s}
    - {group: victims, do: healPods, at: 4s}
`

// createsAndDeletes records, on the fleet's clock, every create and delete the run sends for its
// workloads, and the delete options.
type created struct {
	resource string
	at       time.Time
}

type createsAndDeletes struct {
	mu      sync.Mutex
	creates []created
	deletes []string // resource/name uid=...
}

func withWorkloadClient(rec *createsAndDeletes, now func() time.Time) harnessOption {
	return func(_ *fleet.Config, rc *Config, client *fake.Clientset) {
		rc.Client = client
		watched := map[string]bool{"namespaces": true, "deployments": true, "services": true, "jobs": true, "daemonsets": true}
		client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if watched[a.GetResource().Resource] {
				rec.mu.Lock()
				rec.creates = append(rec.creates, created{a.GetResource().Resource, now()})
				rec.mu.Unlock()
			}
			return false, nil, nil
		})
		client.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if d := a.(k8stesting.DeleteActionImpl); watched[a.GetResource().Resource] {
				uid := "none"
				if p := d.DeleteOptions.Preconditions; p != nil && p.UID != nil {
					uid = string(*p.UID)
				}
				rec.mu.Lock()
				rec.deletes = append(rec.deletes, a.GetResource().Resource+"/"+d.GetName()+" uid="+uid)
				rec.mu.Unlock()
			}
			return false, nil, nil
		})
	}
}

func TestWorkloadsAreCreatedAtTheRateAndRemovedAtTheEnd(t *testing.T) {
	rec := &createsAndDeletes{}
	var h *harness
	h = newHarness(t, workloadsProfile, withWorkloadClient(rec, func() time.Time { return h.clock.Now() }))
	// Someone else's Deployment in default, of a workload's name: never touched.
	other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	if _, err := h.client.AppsV1().Deployments("default").Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := h.waitForPhases()
	fc := h.fleet.Config()
	ns := WorkloadNamespace(fc.Fleet, fc.RunID)
	h.advanceTo(start, 5*time.Second)

	rec.mu.Lock()
	// default's web (created before the phases, at a negative offset) aside: the namespace, web and its
	// Service, batch-0, batch-1, agent, one every half second from the start.
	var creates []string
	for _, c := range rec.creates {
		if !c.at.Before(start) {
			creates = append(creates, c.resource+"@"+c.at.Sub(start).String())
		}
	}
	rec.mu.Unlock()
	want := []string{"namespaces@0s", "deployments@500ms", "services@1s", "jobs@1.5s", "jobs@2s", "daemonsets@2.5s"}
	if !slices.Equal(creates, want) {
		t.Errorf("creates = %v, want %v", creates, want)
	}

	ctx := context.Background()
	nsObj, err := h.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nsObj.Labels[fleetname.Label] != fc.Fleet || nsObj.Labels[RunLabel] != fc.RunID {
		t.Errorf("namespace labels = %v", nsObj.Labels)
	}
	web, err := h.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *web.Spec.Replicas != 6 {
		t.Errorf("web replicas = %d, want 6 (replicasPerNode 1 on 6 nodes)", *web.Spec.Replicas)
	}
	pod := web.Spec.Template
	if pod.Labels[fleetname.Label] != fc.Fleet || pod.Labels[RunLabel] != fc.RunID || pod.Labels[WorkloadLabel] != "web" {
		t.Errorf("pod template labels = %v", pod.Labels)
	}
	if pod.Spec.NodeSelector[fleetname.Label] != fc.Fleet {
		t.Errorf("node selector = %v, want the fleet's label", pod.Spec.NodeSelector)
	}
	if c := pod.Spec.Containers[0]; c.Image != profiles.DefaultWorkloadImage || !c.Resources.Requests.Cpu().Equal(resource.MustParse("10m")) {
		t.Errorf("container = %+v", c)
	}
	if tsc := pod.Spec.TopologySpreadConstraints; len(tsc) != 2 || tsc[0].TopologyKey != corev1.LabelTopologyZone || tsc[1].TopologyKey != corev1.LabelHostname ||
		tsc[0].MaxSkew != 1 || tsc[1].MaxSkew != 1 || tsc[0].WhenUnsatisfiable != corev1.ScheduleAnyway || tsc[1].WhenUnsatisfiable != corev1.ScheduleAnyway {
		t.Errorf("spread = %+v, want maxSkew 1 ScheduleAnyway on the zone, then on the node", tsc)
	}
	var tolerates []string
	for _, tol := range pod.Spec.Tolerations {
		if tol.TolerationSeconds != nil {
			tolerates = append(tolerates, tol.Key)
		}
	}
	if !slices.Equal(tolerates, []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}) {
		t.Errorf("timed tolerations = %v", tolerates)
	}
	if _, err := h.client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	job, err := h.client.BatchV1().Jobs(ns).Get(ctx, "batch-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *job.Spec.Parallelism != 3 || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever ||
		job.Spec.Template.Annotations[RunDurationAnnotation] != "10s" {
		t.Errorf("job = %+v", job.Spec)
	}

	h.advanceTo(start, 20*time.Second)
	h.finished()
	r := h.runner.Record()
	if r.Workloads == nil || r.Workloads.Created != 6 || r.Workloads.Objects != 6 || r.Workloads.Failed != 0 {
		t.Errorf("workload record = %+v", r.Workloads)
	}
	for _, op := range []profiles.Op{profiles.OpCrashPods, profiles.OpUnreadyPods, profiles.OpHealPods} {
		if got := applied(r, op); len(got) != 2 {
			t.Errorf("%s applied to %d nodes, want the 2 victims", op, len(got))
		}
	}
	rec.mu.Lock()
	deletes := slices.Clone(rec.deletes)
	rec.mu.Unlock()
	// Last created first, each on the UID its creation returned, the namespace last.
	if len(deletes) != 6 || !strings.HasPrefix(deletes[0], "daemonsets/agent uid=uid-") || !strings.HasPrefix(deletes[5], "namespaces/"+ns+" uid=uid-") {
		t.Errorf("deletes = %v", deletes)
	}
	for _, d := range deletes {
		if strings.HasSuffix(d, "uid=none") {
			t.Errorf("%s: deleted without a UID precondition", d)
		}
	}
	if _, err := h.client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's Deployment: %v", err)
	}
	if _, err := h.client.BatchV1().Jobs(ns).Get(ctx, "batch-0", metav1.GetOptions{}); err == nil {
		t.Error("batch-0 is left after the run")
	}
}

// A run cut short by a signal deletes what it created so far, and creates nothing more.
func TestWorkloadsAreRemovedAfterASignal(t *testing.T) {
	rec := &createsAndDeletes{}
	var h *harness
	h = newHarness(t, workloadsProfile, withWorkloadClient(rec, func() time.Time { return h.clock.Now() }))
	start := h.waitForPhases()
	h.advanceTo(start, 1200*time.Millisecond) // the namespace, web, its Service
	h.cancel()
	<-h.runErr
	h.runErr <- nil
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.creates) != 3 || len(rec.deletes) != 3 {
		t.Errorf("creates %v, deletes %v: want the first 3 created and deleted", rec.creates, rec.deletes)
	}
}

// withRegistrationTaint gives each Node the not-ready:NoSchedule taint the apiserver's NodeTaint
// admission puts on a new Node, which the node lifecycle controller removes once it sees it Ready.
func withRegistrationTaint(_ *fleet.Config, _ *Config, client *fake.Clientset) {
	client.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if n, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Node); ok {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
		}
		return false, nil, nil
	})
}

// Ready nodes still tainted not-ready are no place for the workloads' pods: the phases, and the
// workloads' creation, wait until the node lifecycle controller has untainted every node.
func TestWorkloadsWaitForTheNodesToBeUntainted(t *testing.T) {
	rec := &createsAndDeletes{}
	var h *harness
	h = newHarness(t, workloadsProfile, withRegistrationTaint, withWorkloadClient(rec, func() time.Time { return h.clock.Now() }))
	<-h.fleet.Running()
	h.fleet.Scheduler().Advance(h.clock, t0.Add(5*time.Second))
	n := h.runner.plan.Nodes
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return h.fleet.Progress().Ready >= n, nil }); err != nil {
		t.Fatalf("%d of %d nodes Ready", h.fleet.Progress().Ready, n)
	}
	for range 10 {
		h.fleet.Scheduler().Advance(h.clock, h.clock.Now().Add(time.Second))
	}
	if start := h.runner.Record().Start; !start.IsZero() {
		t.Fatalf("the phases began at %v with every node still tainted not-ready; log:\n%s", start, h.log)
	}
	rec.mu.Lock()
	early := len(rec.creates)
	rec.mu.Unlock()
	if early != 0 || h.fleet.Progress().Schedulable != 0 {
		t.Fatalf("%d workload objects created, %d nodes schedulable, before any node was untainted", early, h.fleet.Progress().Schedulable)
	}

	ctx := context.Background()
	for i := range n {
		node := h.node(fleetname.NodeName(h.fleet.Config().NamePrefix, i))
		node.Spec.Taints = nil
		if _, err := h.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return h.fleet.Progress().Schedulable >= n, nil }); err != nil {
		t.Fatalf("%d of %d nodes schedulable once untainted", h.fleet.Progress().Schedulable, n)
	}
	start := h.stepUntilStarted(10 * time.Second)
	h.advanceTo(start, time.Second)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.creates) == 0 || rec.creates[0].resource != "namespaces" || rec.creates[0].at.Before(start) {
		t.Errorf("creates %v: want the namespace first, at the phases' start %v", rec.creates, start)
	}
}

// The profile's fit check uses the allocatable a fake node reports.
func TestProfilesKnowTheNodesAllocatable(t *testing.T) {
	a := agent.DefaultAllocatable()
	want := profiles.NodeAllocatable{MilliCPU: a.Cpu().MilliValue(), Memory: a.Memory().Value(), Pods: a.Pods().Value()}
	if profiles.DefaultNodeAllocatable != want {
		t.Errorf("profiles.DefaultNodeAllocatable = %+v, agent.DefaultAllocatable() = %+v", profiles.DefaultNodeAllocatable, want)
	}
}

func TestARunWithWorkloadsNeedsAClient(t *testing.T) {
	plan := resolvePlan(t, workloadsProfile)
	f, err := fleet.NewWithClients(fleettest.Resolve(t, fleet.Config{Nodes: 6, Zones: 3, ZoneOf: profiles.ZoneOf}), fake.NewClientset(), []agent.Clients{{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Plan: plan, Fleet: f}); err == nil || !strings.Contains(err.Error(), "no client") {
		t.Errorf("New without a client: %v", err)
	}
}
