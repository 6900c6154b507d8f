package fleet

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/conditions"
	"fakelet.dev/fakelet/internal/fleettest"
)

// podActions counts the requests on pods by verb (with "/status" for the subresource), leaving out
// gets: the tests' own.
func podActions(tf *testFleet) map[string]int {
	out := map[string]int{}
	for _, a := range tf.client.Actions() {
		if a.GetResource().Resource != "pods" || a.GetVerb() == "get" {
			continue
		}
		k := a.GetVerb()
		if a.GetSubresource() != "" {
			k += "/" + a.GetSubresource()
		}
		out[k]++
	}
	return out
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// pollAdvancing is poll with the fleet's clock moving on 100 ms at a time meanwhile, as a real one
// would: the pods are created at the pod rate once the watch saw their node, on that clock.
func (tf *testFleet) pollAdvancing(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll(t, what, func() bool {
		if cond() {
			return true
		}
		tf.advanceBy(t, 100*time.Millisecond)
		return false
	})
}

func getPod(t *testing.T, tf *testFleet, name string) *corev1.Pod {
	t.Helper()
	p, err := tf.client.CoreV1().Pods(fleetname.PodNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// advanceBy moves the fleet's clock on by d from where it is.
func (tf *testFleet) advanceBy(t *testing.T, d time.Duration) {
	t.Helper()
	tf.advance(t, tf.clock.Now().Sub(t0)+d)
}

// The fleet creates its pods bound to their registered nodes, labelled and tolerating as configured;
// each agent reports its pods once, as the kubelet's status manager: Pending, the sandbox ready, then Running and Ready
// (a GET before each patch, which podActions leaves out), and then sends nothing about them, however
// many heartbeats pass.
func TestPodsAreCreatedBoundAndReportedReadyOnce(t *testing.T) {
	// Both footprints report a pod Pending, then its sandbox ready and Running and Ready a relist
	// later, as the kubelet's status manager does.
	for fp, patches := range map[agent.Footprint]int{agent.FootprintHeartbeat: 18, agent.FootprintKubelet: 18} {
		t.Run(string(fp), func(t *testing.T) { podsCreatedBoundAndReportedReadyOnce(t, fp, patches) })
	}
}

func podsCreatedBoundAndReportedReadyOnce(t *testing.T, fp agent.Footprint, patches int) {
	tf := startFleet(t, Config{Nodes: 3, PodsPerNode: 2, PodTolerationSeconds: ptr.To[int64](20), Footprint: fp})
	tf.advance(t, 5*time.Second)
	tf.pollAdvancing(t, "6 Ready pods", func() bool { return tf.Progress().PodsReady == 6 })
	for n := range 3 {
		node := fleetname.NodeName(fleetname.DefaultNamePrefix, n)
		for i := range 2 {
			p := getPod(t, tf, PodName(node, i))
			if p.Spec.NodeName != node || p.Labels[fleetname.Label] != fleetname.DefaultFleet {
				t.Errorf("pod %s: node %q labels %v, want bound to %s with the fleet label", p.Name, p.Spec.NodeName, p.Labels, node)
			}
			if len(p.Spec.Tolerations) != 2 || *p.Spec.Tolerations[1].TolerationSeconds != 20 ||
				p.Spec.Tolerations[1].Key != corev1.TaintNodeUnreachable || p.Spec.Tolerations[1].Effect != corev1.TaintEffectNoExecute {
				t.Errorf("pod %s: tolerations %+v, want not-ready and unreachable NoExecute for 20 s", p.Name, p.Spec.Tolerations)
			}
			if p.Status.Phase != corev1.PodRunning || !conditions.PodReady(p) || p.Status.PodIP == "" || p.Status.HostIP == "" ||
				len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
				t.Errorf("pod %s: status %+v, want Running and Ready with IPs and a ready container", p.Name, p.Status)
			}
		}
	}
	// Two watches: the fleet's pods, counted, and every bound pod, the agents' pod source (these
	// agents have no watches of their own).
	want := map[string]int{"create": 6, "patch/status": patches, "list": 2, "watch": 2}
	if got := podActions(tf); !reflect.DeepEqual(got, want) {
		t.Errorf("pod requests %v, want %v", got, want)
	}
	tf.advanceBy(t, 10*time.Minute) // 60 lease renewals and 2 status reports per node
	if got := podActions(tf); !reflect.DeepEqual(got, want) {
		t.Errorf("after 10 minutes of heartbeats, pod requests %v, want still %v", got, want)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}

// A kubelet that starts again reports each of its pods, so that a pod the node lifecycle controller
// marked not Ready while it was down is Ready again; a pod marked not Ready while the agent runs is
// reported again at the status manager's next sync.
func TestPodsReportedAgainAfterStartAndReconciled(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 2, PodsPerNode: 2})
	tf.advance(t, 5*time.Second)
	tf.pollAdvancing(t, "4 Ready pods", func() bool { return tf.Progress().PodsReady == 4 })
	node := fleetname.NodeName(fleetname.DefaultNamePrefix, 0)
	tf.Agent(0).Stop()
	markNotReady(t, tf, PodName(node, 1))
	poll(t, "3 Ready pods", func() bool { return tf.Progress().PodsReady == 3 })
	tf.advanceBy(t, time.Minute)
	if tf.Progress().PodsReady != 3 {
		t.Fatalf("a stopped agent reported its pod: %d Ready", tf.Progress().PodsReady)
	}
	before := podActions(tf)["patch/status"]
	if err := tf.StartNode(0); err != nil {
		t.Fatal(err)
	}
	tf.advanceBy(t, time.Second)
	tf.pollAdvancing(t, "4 Ready pods after the start", func() bool { return tf.Progress().PodsReady == 4 })
	// The status manager of a kubelet that starts again syncs each of its pods, and patches the one
	// whose status differs from what it reports; the other's patch would be empty and is not sent.
	if got := podActions(tf)["patch/status"] - before; got != 1 {
		t.Errorf("%d pod status patches after the start, want 1: the pod marked not Ready", got)
	}

	// Running: the controller marks a pod not Ready (its view of the node is late); the agent puts it
	// right at its next sync, not at once.
	markNotReady(t, tf, PodName(node, 0))
	poll(t, "3 Ready pods", func() bool { return tf.Progress().PodsReady == 3 })
	tf.Scheduler().WaitIdle()
	if tf.Progress().PodsReady != 3 {
		t.Errorf("the pod was reported at once; want at the next sync")
	}
	tf.advanceBy(t, 11*time.Second)
	poll(t, "4 Ready pods after the sync", func() bool { return tf.Progress().PodsReady == 4 })
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}

func markNotReady(t *testing.T, tf *testFleet, name string) {
	t.Helper()
	p := getPod(t, tf, name)
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	if _, err := tf.client.CoreV1().Pods(fleetname.PodNamespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A pod whose node is told NotReady is not reported Ready until the node is Ready again.
func TestPodsNotReportedWhileTheNodeIsNotReady(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 1, PodsPerNode: 1})
	tf.advance(t, 5*time.Second)
	tf.pollAdvancing(t, "1 Ready pod", func() bool { return tf.Progress().PodsReady == 1 })
	tf.Agent(0).SetHealth(func(h *agent.Health) { h.NotReady = true })
	tf.advanceBy(t, 11*time.Second)
	markNotReady(t, tf, PodName(fleetname.NodeName(fleetname.DefaultNamePrefix, 0), 0))
	poll(t, "no Ready pod", func() bool { return tf.Progress().PodsReady == 0 })
	tf.advanceBy(t, time.Minute)
	if tf.Progress().PodsReady != 0 {
		t.Fatal("the agent reported its pod Ready while its node is not Ready")
	}
	tf.Agent(0).SetHealth(func(h *agent.Health) { h.NotReady = false })
	tf.advanceBy(t, 11*time.Second)
	poll(t, "1 Ready pod once the node is Ready", func() bool { return tf.Progress().PodsReady == 1 })
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}

// An evicted pod is not recreated; one whose graceful deletion began is finished by its agent, with
// no grace period left and on its UID.
func TestEvictedPodsStayDeleted(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 1, PodsPerNode: 2})
	tf.advance(t, 5*time.Second)
	tf.pollAdvancing(t, "2 Ready pods", func() bool { return tf.Progress().PodsReady == 2 })
	node := fleetname.NodeName(fleetname.DefaultNamePrefix, 0)
	if err := tf.client.CoreV1().Pods(fleetname.PodNamespace).Delete(context.Background(), PodName(node, 0), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p := getPod(t, tf, PodName(node, 1))
	p.DeletionTimestamp = &metav1.Time{Time: tf.clock.Now()}
	if _, err := tf.client.CoreV1().Pods(fleetname.PodNamespace).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the terminating pod deleted by its agent", func() bool {
		_, err := tf.client.CoreV1().Pods(fleetname.PodNamespace).Get(context.Background(), PodName(node, 1), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	tf.advanceBy(t, 5*time.Minute)
	if pods, _ := tf.client.CoreV1().Pods(fleetname.PodNamespace).List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d pods after the evictions, want none: evicted pods are not recreated", len(pods.Items))
	}
	var confirm []string
	for _, a := range tf.client.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			d := a.(interface{ GetDeleteOptions() metav1.DeleteOptions }).GetDeleteOptions()
			if d.GracePeriodSeconds != nil && *d.GracePeriodSeconds == 0 && d.Preconditions != nil && d.Preconditions.UID != nil && *d.Preconditions.UID == p.UID {
				confirm = append(confirm, "ok")
			}
		}
	}
	if len(confirm) != 1 {
		t.Errorf("the agent's deletion of %s: %v, want one delete with grace 0 on its UID", p.Name, confirm)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}

// Cleanup deletes the pods the fleet created, and no other: not a pod with the fleet's label it did
// not create, nor one with its pod name that is someone else's (which it refuses to adopt). Its
// agent runs the foreign pod as a kubelet runs any pod bound to its node.
func TestCleanupDeletesOnlyThePodsTheFleetCreated(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 2, PodsPerNode: 1})
	ctx := context.Background()
	foreign := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: PodName(fleetname.NodeName(fleetname.DefaultNamePrefix, 1), 0), Namespace: fleetname.PodNamespace, Labels: map[string]string{"team": "prod"}},
			Spec: corev1.PodSpec{NodeName: fleetname.NodeName(fleetname.DefaultNamePrefix, 1), Containers: []corev1.Container{{Name: "app", Image: "app"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: fleetname.PodNamespace, Labels: map[string]string{fleetname.Label: fleetname.DefaultFleet}},
			Spec: corev1.PodSpec{NodeName: fleetname.NodeName(fleetname.DefaultNamePrefix, 0), Containers: []corev1.Container{{Name: "app", Image: "app"}}}},
	}
	for _, p := range foreign {
		if _, err := tf.client.CoreV1().Pods(fleetname.PodNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tf.advance(t, 5*time.Second)
	tf.pollAdvancing(t, "the fleet's one pod Ready and the other given up", func() bool {
		p := tf.Progress()
		return p.PodsReady == 1 && p.PodsFailed == 1
	})
	if err := tf.pods.createErr(); err == nil || !strings.Contains(err.Error(), "is not fleet \"fakelet\"'s pod") {
		t.Errorf("creation error %v, want the foreign pod named", err)
	}
	if got := getPod(t, tf, foreign[0].Name); got.Status.Phase != corev1.PodRunning {
		t.Errorf("the foreign pod's status %+v, want Running: its node's kubelet runs it", got.Status)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
	pods, err := tf.client.CoreV1().Pods(fleetname.PodNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	if want := []string{foreign[0].Name, "stray"}; !reflect.DeepEqual(left, want) {
		t.Errorf("pods left %v, want only the foreign ones %v", left, want)
	}
}

func TestPodConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: 1, PodsPerNode: -1}, "pods per node must be between 0 and 110"},
		{Config{Nodes: 1, PodsPerNode: 111}, "pods per node must be between 0 and 110"},
		{Config{Nodes: 1, PodTolerationSeconds: ptr.To[int64](5)}, "pods per node is 0"},
		{Config{Nodes: 1, PodsPerNode: 1, PodTolerationSeconds: ptr.To[int64](-5)}, "must not be negative"},
		{Config{Nodes: 1, PodsPerNode: 1, PodQPS: -1}, "pod QPS must be positive"},
	} {
		_, err := tc.cfg.Resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// A run after a --keep run adopts the Nodes and the pods it left (the watch's first list shows the
// Nodes before the fleet runs), reports them Ready, and deletes them at its end. In the kubelet
// footprint the adopted pods are already what the status manager would report, so no patch and no
// watch event follows their adoption.
func TestPodsOfAKeptRunAreAdopted(t *testing.T) {
	for _, fp := range []agent.Footprint{agent.FootprintHeartbeat, agent.FootprintKubelet} {
		t.Run(string(fp), func(t *testing.T) { podsOfAKeptRunAreAdopted(t, fp) })
	}
}

func podsOfAKeptRunAreAdopted(t *testing.T, fp agent.Footprint) {
	kept := startFleet(t, Config{Nodes: 2, PodsPerNode: 2, Keep: true, Footprint: fp})
	kept.advance(t, 5*time.Second)
	kept.pollAdvancing(t, "4 Ready pods", func() bool { return kept.Progress().PodsReady == 4 })
	if err := kept.stop(); err != nil {
		t.Fatal(err)
	}
	before, err := kept.client.CoreV1().Pods(fleetname.PodNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(before.Items) != 4 {
		t.Fatalf("%d pods kept (%v), want 4", len(before.Items), err)
	}
	// The kept run holds its Nodes until their heartbeats expire.
	kept.clock.Step(41 * time.Second)

	cfg := Config{Nodes: 2, PodsPerNode: 2, Clock: kept.clock, Footprint: fp}
	cfg.Template.Images = 3
	f, err := NewWithClients(fleettest.Resolve(t, cfg), kept.client, []agent.Clients{{Core: kept.client.CoreV1(), Coordination: kept.client.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tf := &testFleet{Fleet: f, client: kept.client, clock: kept.clock, cancel: cancel, done: make(chan error, 1)}
	go func() { tf.done <- f.Run(ctx) }()
	t.Cleanup(cancel)
	tf.advanceBy(t, time.Second)
	tf.pollAdvancing(t, "the 4 kept pods adopted and Ready", func() bool { p := tf.Progress(); return p.PodsReady == 4 && p.Pods == 4 })
	after, err := tf.client.CoreV1().Pods(fleetname.PodNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range after.Items {
		if p.UID != before.Items[i].UID {
			t.Errorf("pod %s has uid %s, want the kept pod's %s", p.Name, p.UID, before.Items[i].UID)
		}
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
	if left, _ := tf.client.CoreV1().Pods(fleetname.PodNamespace).List(context.Background(), metav1.ListOptions{}); len(left.Items) != 0 {
		t.Errorf("%d pods left after the second run's cleanup, want none", len(left.Items))
	}
}

// Pods need permissions on pods in their namespace, checked before anything is written, and only
// when the run has pods.
func TestPreflightChecksPodPermissionsOnlyWithPods(t *testing.T) {
	noPods := func(r *authorizationv1.ResourceAttributes) bool { return r.Resource != "pods" }
	for _, tc := range []struct {
		pods int
		want string
	}{
		{0, ""},
		{2, "missing 5 permission(s): create pods in fakelet-pods (the fleet creates its pods), get pods in fakelet-pods"},
	} {
		client := fake.NewClientset()
		reviewer(client, "carol", noPods)
		f, err := NewWithClients(fleettest.Resolve(t, Config{Nodes: 1, PodsPerNode: tc.pods}), client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
		if err != nil {
			t.Fatal(err)
		}
		f.checkPermissions = true // as New sets it
		err = f.Preflight(t.Context())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("without pods: %v", err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("with pods: %v, want an error containing %q", err, tc.want)
		}
	}
	var fleetID []string
	for _, p := range Permissions(fleettest.Resolve(t, Config{Nodes: 1, PodsPerNode: 1, Identity: IdentityFleet})) {
		fleetID = append(fleetID, p.String())
	}
	if !slices.Contains(fleetID, "patch pods/status in fakelet-pods") {
		t.Errorf("--identity=fleet permissions with pods %v lack the kubelets' status patches", fleetID)
	}
}

// In the heartbeat footprint an agent reports each pod Pending, its sandbox ready, then Running and
// Ready, with a patch each and no GET: it patches from the status it last reported.
func TestHeartbeatFootprintReportsPodsWithoutGet(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 3, PodsPerNode: 2, Footprint: agent.FootprintHeartbeat})
	tf.advance(t, 5*time.Second)
	tf.pollAdvancing(t, "6 Ready pods", func() bool { return tf.Progress().PodsReady == 6 })
	for _, a := range tf.client.Actions() {
		if a.GetResource().Resource == "pods" && a.GetVerb() == "get" {
			t.Errorf("GET of a pod in the heartbeat footprint: %v", a)
		}
	}
	want := map[string]int{"create": 6, "patch/status": 18, "list": 2, "watch": 2}
	if got := podActions(tf); !reflect.DeepEqual(got, want) {
		t.Errorf("pod requests %v, want %v", got, want)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}
