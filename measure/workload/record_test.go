package workload

import (
	"context"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/measure/reaction"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// script drives a Recorder on a fake clock: each call happens at its offset from t0.
type script struct {
	t     *testing.T
	clock *testingclock.FakeClock
	r     *Recorder
	pods  map[string]*corev1.Pod
	slice *discoveryv1.EndpointSlice
	dep   *appsv1.Deployment
}

func newScript(t *testing.T) *script {
	c := testingclock.NewFakeClock(t0)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}, Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(3))}}
	return &script{t: t, clock: c, r: NewRecorder(c, t0), pods: map[string]*corev1.Pod{},
		slice: &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abcde"}}, dep: dep}
}

func ptr[T any](v T) *T { return &v }

func (s *script) at(d time.Duration) *script { s.clock.SetTime(t0.Add(d)); return s }

// pod changes pod name (created if new) with change, and shows the Recorder the change.
func (s *script) pod(name string, change func(*corev1.Pod)) {
	old := s.pods[name]
	var n *corev1.Pod
	if old == nil {
		n = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{WorkloadLabel: "web"}, CreationTimestamp: metav1.NewTime(s.clock.Now().Truncate(time.Second))}}
	} else {
		n = old.DeepCopy()
	}
	change(n)
	s.pods[name] = n
	s.r.ObservePod(old, n)
}

func (s *script) gone(name string) {
	s.r.ObservePod(s.pods[name], nil)
	delete(s.pods, name)
}

func bind(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeName = node }
}

func (s *script) run(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
		Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(s.clock.Now().Truncate(time.Second))}}}}
}

func ready(on bool) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		st := corev1.ConditionFalse
		if on {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	}
}

// endpoints sets the slice's endpoints: pod name to ready.
func (s *script) endpoints(eps map[string]bool) {
	old := s.slice
	n := old.DeepCopy()
	n.Endpoints = nil
	for name, r := range eps {
		n.Endpoints = append(n.Endpoints, discoveryv1.Endpoint{TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(r)}})
	}
	s.slice = n
	s.r.ObserveEndpointSlice(old, n)
}

func (s *script) available(n int32) {
	old := s.dep
	d := old.DeepCopy()
	d.Status.ObservedGeneration, d.Status.AvailableReplicas = 1, n
	s.dep = d
	s.r.ObserveDeployment(old, d)
}

// An outage of one node under a Deployment of three pods: a is evicted and replaced by d on another
// node; b, on the same node, turns not Ready and Ready again in place; c, elsewhere, is untouched.
func TestReactionOfADeploymentToANodeOutage(t *testing.T) {
	s := newScript(t)
	for _, p := range []struct{ name, node string }{{"a", "n1"}, {"b", "n1"}, {"c", "n2"}} {
		s.at(0).pod(p.name, func(*corev1.Pod) {})
		s.at(500*time.Millisecond).pod(p.name, bind(p.node))
		s.at(2200*time.Millisecond).pod(p.name, func(pod *corev1.Pod) { s.run(pod); ready(true)(pod) })
	}
	s.at(2500 * time.Millisecond).endpoints(map[string]bool{"a": true, "b": true, "c": true})
	s.at(3 * time.Second).available(3)

	s.r.Applied("outage", "victims", "stop", "n1", t0.Add(10*time.Second))
	s.r.Applied("outage", "victims", "stop", "n1", t0.Add(11*time.Second)) // the first arrival counts
	s.r.Applied("outage", "victims", "latency", "n2", t0.Add(10*time.Second))

	s.at(60*time.Second).pod("a", ready(false))
	s.at(60*time.Second).pod("b", ready(false))
	s.at(60 * time.Second).available(1)
	s.at(61 * time.Second).endpoints(map[string]bool{"a": false, "b": false, "c": true})
	s.at(90*time.Second).pod("a", func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue})
	})
	s.at(90*time.Second).pod("a", func(p *corev1.Pod) { p.DeletionTimestamp = ptr(metav1.NewTime(s.clock.Now())) })
	s.at(91*time.Second).pod("d", func(*corev1.Pod) {})
	s.at(92*time.Second).pod("d", bind("n2"))
	s.at(94*time.Second).pod("d", func(pod *corev1.Pod) { s.run(pod); ready(true)(pod) })
	s.at(95 * time.Second).endpoints(map[string]bool{"b": false, "c": true, "d": true})
	s.at(96 * time.Second).available(2)
	s.at(100 * time.Second).gone("a")
	s.at(130*time.Second).pod("b", ready(true))
	s.at(131 * time.Second).endpoints(map[string]bool{"b": true, "c": true, "d": true})
	s.at(131 * time.Second).available(3)

	phases := []reaction.Phase{{Name: "steady", Start: t0, End: t0.Add(10 * time.Second)}, {Name: "outage", Start: t0.Add(10 * time.Second), End: t0.Add(140 * time.Second)}}
	sum := s.r.Summary("ns", phases, t0.Add(140*time.Second))
	if len(sum.Reactions) != 1 {
		t.Fatalf("reactions = %+v, want one (latency breaks nothing)", sum.Reactions)
	}
	re := sum.Reactions[0]
	want := Reaction{Phase: "outage", Group: "victims", Op: "stop", Nodes: 1, Pods: 2, Running: 3, Lost: 0, Steps: []Step{
		{Name: StepNotReady, Count: 2, First: 50, Median: 50, Last: 50},
		{Name: StepEndpointNotReady, Count: 2, First: 51, Median: 51, Last: 51},
		{Name: StepEvicted, Count: 1, First: 80, Median: 80, Last: 80},
		{Name: StepReplacementCreated, Count: 1, First: 81, Median: 81, Last: 81},
		{Name: StepScheduledElsewhere, Count: 1, First: 82, Median: 82, Last: 82},
		{Name: StepReplacementRunning, Count: 1, First: 84, Median: 84, Last: 84},
		{Name: StepReplacementReady, Count: 1, First: 84, Median: 84, Last: 84},
		{Name: StepReadyInPlace, Count: 1, First: 120, Median: 120, Last: 120},
		{Name: StepDeploymentAvailable, Count: 1, First: 121, Median: 121, Last: 121},
	}}
	if !reflect.DeepEqual(re, want) {
		t.Errorf("reaction:\n got %+v\nwant %+v", re, want)
	}

	// Startup: a, b, c created at 0, bound at 0.5 s, started (startedAt truncated to 2 s) and seen
	// Running at 2.2 s; d created at 91, bound at 92, Running at 94.
	st := sum.Startup
	if st.Pods != 4 || st.Excluded != 0 {
		t.Fatalf("startup = %+v", st)
	}
	check := func(name string, p50, max float64) {
		t.Helper()
		if got := st.Latency[name]; got.P50 != p50 || got.Max != max || got.Count != 4 {
			t.Errorf("%s = %+v, want p50 %v, max %v", name, got, p50, max)
		}
	}
	check(CreateToSchedule, 0.5, 1)
	check(ScheduleToRun, 1.5, 2)
	check(RunToWatch, 0.2, 0.2)
	check(ScheduleToWatch, 1.7, 2)
	check(PodStartup, 2.2, 3)

	wantTP := []Throughput{{Phase: "steady", Scheduled: 3, Perc50: 3, Perc90: 3, Perc99: 3, Max: 3},
		{Phase: "outage", Scheduled: 1, Perc50: 1, Perc90: 1, Perc99: 1, Max: 1}}
	if !reflect.DeepEqual(sum.Throughput, wantTP) {
		t.Errorf("throughput = %+v, want %+v", sum.Throughput, wantTP)
	}
}

// A pod evicted with no replacement by the end, and one not Ready that never comes back, are lost.
func TestPodsLostForGood(t *testing.T) {
	s := newScript(t)
	for _, name := range []string{"a", "b"} {
		s.at(0).pod(name, bind("n1"))
		s.at(time.Second).pod(name, func(pod *corev1.Pod) { s.run(pod); ready(true)(pod) })
	}
	s.r.Applied("outage", "victims", "partition", "n1", t0.Add(10*time.Second))
	s.at(60*time.Second).pod("a", ready(false))
	s.at(60*time.Second).pod("b", ready(false))
	s.at(90*time.Second).pod("a", func(p *corev1.Pod) { p.DeletionTimestamp = ptr(metav1.NewTime(s.clock.Now())) })
	// A pod created after the end does not count.
	s.at(200*time.Second).pod("c", bind("n2"))
	sum := s.r.Summary("ns", nil, t0.Add(120*time.Second))
	if re := sum.Reactions[0]; re.Pods != 2 || re.Lost != 2 {
		t.Errorf("reaction = %+v, want 2 pods, both lost", re)
	}
	// Pods first seen already bound (created before the phases) are scheduled in no phase; their
	// startup counts, as the watch saw them start.
	if sum.Startup.Pods != 2 {
		t.Errorf("startup pods = %d, want 2", sum.Startup.Pods)
	}
}

// Pods created before the watch began, and pods whose image pull the runtime delays, are left out
// of the startup latency.
func TestStartupLeavesOutOldPodsAndPulledImages(t *testing.T) {
	c := testingclock.NewFakeClock(t0)
	r := NewRecorder(c, t0)
	running := func(name string, created time.Time, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created), Annotations: ann},
			Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	var seen []Startup
	r.OnStartup(func(s Startup) { seen = append(seen, s) })
	r.ObservePod(nil, running("old", t0.Add(-time.Hour), nil))
	r.ObservePod(nil, running("pulled", t0, map[string]string{PullDelayAnnotation: "5s"}))
	r.ObservePod(nil, running("new", t0, nil))
	sum := r.Summary("ns", nil, t0)
	if sum.Startup.Pods != 1 || sum.Startup.Excluded != 2 || len(seen) != 1 {
		t.Errorf("startup = %+v, %d seen live; want 1 pod, 2 excluded", sum.Startup, len(seen))
	}
}

// The watches feed the Recorder from one informer each, on the fake clientset.
func TestWatchFeedsTheRecorder(t *testing.T) {
	client := fake.NewClientset()
	c := testingclock.NewFakeClock(t0)
	r := NewRecorder(c, t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.Watch(ctx, client, "ns"); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "uid-a", Labels: map[string]string{WorkloadLabel: "web"},
		CreationTimestamp: metav1.NewTime(t0)}, Spec: corev1.PodSpec{NodeName: "n1"}}
	if _, err := client.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := pod.DeepCopy()
	other.Namespace, other.Name, other.UID = "default", "b", "uid-b"
	if _, err := client.CoreV1().Pods("default").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1))}}
	if _, err := client.AppsV1().Deployments("ns").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.pods) == 1 && len(r.deployments) == 1, nil
	}); err != nil {
		t.Fatal("the recorder never saw the namespace's pod and Deployment")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pods["uid-a"]; p == nil || p.workload != "web" || p.node != "n1" {
		t.Errorf("pod a = %+v", p)
	}
}

// unreadyPods breaks the pods, not the node: not Ready and out of the ready endpoints, then Ready
// again in place after healPods, which is no break of its own.
func TestReactionToUnreadyPods(t *testing.T) {
	s := newScript(t)
	s.at(0).pod("a", bind("n1"))
	s.at(time.Second).pod("a", func(pod *corev1.Pod) { s.run(pod); ready(true)(pod) })
	s.at(time.Second).endpoints(map[string]bool{"a": true})
	s.r.Applied("faults", "g", "unreadyPods", "n1", t0.Add(10*time.Second))
	s.r.Applied("faults", "g", "healPods", "n1", t0.Add(20*time.Second))
	s.at(11*time.Second).pod("a", ready(false))
	s.at(11500 * time.Millisecond).endpoints(map[string]bool{"a": false})
	s.at(21*time.Second).pod("a", ready(true))
	sum := s.r.Summary("ns", nil, t0.Add(30*time.Second))
	if len(sum.Reactions) != 1 {
		t.Fatalf("reactions = %+v, want unreadyPods' alone", sum.Reactions)
	}
	want := Reaction{Phase: "faults", Group: "g", Op: "unreadyPods", Nodes: 1, Pods: 1, Running: 1, Steps: []Step{
		{Name: StepNotReady, Count: 1, First: 1, Median: 1, Last: 1},
		{Name: StepEndpointNotReady, Count: 1, First: 1.5, Median: 1.5, Last: 1.5},
		{Name: StepReadyInPlace, Count: 1, First: 11, Median: 11, Last: 11},
	}}
	if !reflect.DeepEqual(sum.Reactions[0], want) {
		t.Errorf("reaction:\n got %+v\nwant %+v", sum.Reactions[0], want)
	}
}
