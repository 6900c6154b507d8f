package controlplane

import (
	"bufio"
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// testSchedulerBindsAPod registers a Node as a kubelet would (allocatable, Ready), sees the
// controller manager give it a podCIDR from the cluster CIDR, creates a pod without a nodeName and
// sees the scheduler bind it there, at its own APF level.
func testSchedulerBindsAPod(t *testing.T, cp *ControlPlane, metrics *http.Client) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs := clientset(t, cp.AdminConfig())
	const nodeName, ns = "fakelet-e2e-sched", metav1.NamespaceDefault

	resources := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{corev1.LabelHostname: nodeName}},
		Status: corev1.NodeStatus{
			Capacity: resources, Allocatable: resources,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: now, LastTransitionTime: now}},
		},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	registered := untilWatched(ctx, t, cs.CoreV1().Nodes(), nodeName, func(n *corev1.Node) bool { return n.Spec.PodCIDR != "" })
	cidr, err := netip.ParsePrefix(registered.Spec.PodCIDR)
	if err != nil || cidr.Bits() != nodeCIDRMaskSize || !netip.MustParsePrefix(clusterCIDR).Contains(cidr.Addr()) {
		t.Errorf("node %s has podCIDR %q (%v), want a /%d of %s", nodeName, registered.Spec.PodCIDR, err, nodeCIDRMaskSize, clusterCIDR)
	}
	t.Logf("node %s has podCIDR %s", nodeName, registered.Spec.PodCIDR)

	// Admission refuses pods until the service account controller has made the namespace's default
	// ServiceAccount.
	untilWatched(ctx, t, cs.CoreV1().ServiceAccounts(ns), "default", func(*corev1.ServiceAccount) bool { return true })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "scheduled"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
			// The node lifecycle controller lifts the admission's not-ready taint on its next pass;
			// what this test is about does not wait for it.
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, *metav1.NewDeleteOptions(0))
	})
	bound := untilWatched(ctx, t, cs.CoreV1().Pods(ns), pod.Name, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if bound.Spec.NodeName != nodeName {
		t.Errorf("pod bound to %q, want %s", bound.Spec.NodeName, nodeName)
	}

	sched, _ := cp.state.Component(Scheduler)
	const scheduled = `scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}`
	// The scheduler counts the attempt after the binding the watch saw: a metric has no event.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		body, err := scrape(ctx, metrics, sched.MetricsURL)
		if err == nil && labelledValue(body, scheduled) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not >= 1 10 s after the binding (last error %v)", scheduled, err)
		}
	}
	// API Priority and Fairness's suggested FlowSchema kube-scheduler sends system:kube-scheduler's
	// requests to workload-high, apart from the kubelets' node-high and system.
	body, err := scrape(ctx, metrics, cp.APIServerURL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	const dispatched = `apiserver_flowcontrol_dispatched_requests_total{flow_schema="kube-scheduler",priority_level="workload-high"}`
	if v := labelledValue(body, dispatched); v < 1 {
		t.Errorf("%s = %v, want the scheduler's requests there", dispatched, v)
	}
}

// getWatcher is the part of a typed client untilWatched needs.
type getWatcher[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// untilWatched returns the named object once done says so, from a Get and then from a watch from
// that Get's resource version: the object's own events, no polling.
func untilWatched[T interface {
	metav1.Object
	*E
}, E any](ctx context.Context, t *testing.T, c getWatcher[T], name string, done func(T) bool) T {
	t.Helper()
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	if obj, err := c.Get(ctx, name, metav1.GetOptions{}); err == nil {
		if done(obj) {
			return obj
		}
		opts.ResourceVersion = obj.GetResourceVersion()
	}
	w, err := c.Watch(ctx, opts)
	if err != nil {
		t.Fatalf("watch %s: %v", name, err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch of %s ended before it was done", name)
			}
			if obj, isT := ev.Object.(T); isT && (ev.Type == watch.Added || ev.Type == watch.Modified) && done(obj) {
				return obj
			}
		case <-ctx.Done():
			t.Fatalf("%s: %v", name, ctx.Err())
		}
	}
}

// labelledValue sums the samples of series (name{labels} exactly as exposed, labels in order) in
// a Prometheus text exposition, or -1 if there is none.
func labelledValue(exposition, series string) float64 {
	s := bufio.NewScanner(strings.NewReader(exposition))
	s.Buffer(nil, 1<<20)
	v, found := 0.0, false
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), series+" "); ok {
			if x, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				v, found = v+x, true
			}
		}
	}
	if !found {
		return -1
	}
	return v
}
