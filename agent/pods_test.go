package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/internal/conditions"
)

// kubeletPod creates pod in the fake apiserver, as the scheduler left it, and returns it.
func kubeletPod(t *testing.T, h *harness, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 2,
			CreationTimestamp: metav1.NewTime(h.clock.Now())},
		Spec: corev1.PodSpec{NodeName: "fakelet-00003", Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/app:1.0"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))}}},
	}
	if mutate != nil {
		mutate(pod)
	}
	created, err := h.client.CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func (h *harness) pod(name string) *corev1.Pod {
	h.t.Helper()
	p, err := h.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

// startKubelet starts a kubelet-footprint agent whose Node has podCIDR, and lets it register.
func startKubelet(t *testing.T, podCIDR string) (*harness, *Agent) {
	h, a := kubeletStartAgent(t)
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	n := h.node("fakelet-00003")
	n.Spec.PodCIDR = podCIDR
	a.ObserveNode(n)
	h.take()
	return h, a
}

// podCalls are the pod requests among calls, with the patches' bodies.
func podCalls(calls []call) (reqs []string, patches []map[string]any) {
	for _, c := range calls {
		if c.res != "pods" && c.res != "pods/status" {
			continue
		}
		reqs = append(reqs, c.verb+" "+c.res)
		if c.patch != nil {
			var m map[string]any
			_ = json.Unmarshal(c.patch, &m)
			patches = append(patches, m)
		}
	}
	return reqs, patches
}

// A pod someone else created and bound: the status manager's GET and strategic merge patch with the
// UID precondition, Pending with the container being created, then a relist (1 s) later its
// sandbox ready (TestSandboxReadyReportedBeforeContainers) and Running
// and Ready with everything a kubelet reports: the pod IP from the node's podCIDR, the host IP, the
// start time, the QoS class kept, the conditions in the kubelet's order with the observed
// generation, and the container's IDs, started, ready and start time.
func TestPodStatusSequence(t *testing.T) {
	h, a := startKubelet(t, "10.244.3.0/24")
	pod := kubeletPod(t, h, "web-1", nil)
	h.take()
	a.ObservePod(pod)
	h.advance(6500 * time.Millisecond)
	reqs, patches := podCalls(h.take())
	if got, want := strings.Join(reqs, "; "), "get pods; patch pods/status; get pods; patch pods/status; get pods; patch pods/status"; got != want {
		t.Fatalf("requests %s, want %s", got, want)
	}
	for i, p := range patches {
		if md, _ := p["metadata"].(map[string]any); md["uid"] != "uid-web-1" {
			t.Errorf("patch %d %v: want the UID precondition", i, p)
		}
	}
	if st, _ := patches[0]["status"].(map[string]any); st["phase"] != nil || st["podIP"] != nil || st["containerStatuses"] == nil {
		t.Errorf("first patch %v, want the container statuses, the phase left Pending, no pod IP", patches[0])
	}
	got := h.pod("web-1")
	s := got.Status
	if s.Phase != corev1.PodRunning || s.PodIP != "10.244.3.2" || len(s.PodIPs) != 1 || s.HostIP != a.InternalIP().String() ||
		s.StartTime == nil || !s.StartTime.Time.Equal(t0.Add(5*time.Second)) || s.QOSClass != corev1.PodQOSBestEffort || s.ObservedGeneration != 2 {
		t.Errorf("status %+v, want Running at 10.244.3.2 on the node's IP, started at 5 s, BestEffort, generation 2", s)
	}
	var types []string
	for _, c := range s.Conditions {
		types = append(types, string(c.Type))
		if c.Status != corev1.ConditionTrue || c.ObservedGeneration != 2 {
			t.Errorf("condition %+v, want True at generation 2", c)
		}
		if c.Type == corev1.PodScheduled && !c.LastTransitionTime.Time.Equal(t0.Add(-time.Minute)) {
			t.Errorf("PodScheduled moved to %v: the scheduler's time is kept", c.LastTransitionTime)
		}
	}
	if got, want := strings.Join(types, " "), "PodReadyToStartContainers Initialized Ready ContainersReady PodScheduled"; got != want {
		t.Errorf("conditions %s, want %s", got, want)
	}
	cs := s.ContainerStatuses
	if len(cs) != 1 || !cs[0].Ready || cs[0].Started == nil || !*cs[0].Started || cs[0].State.Running == nil ||
		!cs[0].State.Running.StartedAt.Time.Equal(t0.Add(5*time.Second)) || !strings.HasPrefix(cs[0].ContainerID, "containerd://") ||
		!strings.HasPrefix(cs[0].ImageID, "registry.k8s.io/app@sha256:") || cs[0].Image != "registry.k8s.io/app:1.0" {
		t.Errorf("container statuses %+v, want one running since 5 s, started and ready, with its IDs", cs)
	}
	h.take() // the test's own GET
	h.advance(10 * time.Minute)
	for _, c := range h.take() {
		if c.res == "pods" || c.res == "pods/status" {
			t.Errorf("request about a running pod later: %v", c)
		}
	}
}

// A pod that does not fit ends Failed with the kubelet's reason and message, a Warning Event with
// them, and nothing more: no containers, and the kubelet's conditions dropped. A NoSchedule taint
// does not keep a pod off: the kubelet leaves that to the scheduler.
func TestRejectedPod(t *testing.T) {
	h, a := startKubelet(t, "")
	n := h.node("fakelet-00003")
	n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	a.ObserveNode(n)
	big := kubeletPod(t, h, "big", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
	})
	fits := kubeletPod(t, h, "fits", nil)
	a.ObservePod(big)
	a.ObservePod(fits)
	h.advance(8 * time.Second)
	got := h.pod("big")
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != "OutOfcpu" ||
		!strings.HasPrefix(got.Status.Message, "Pod was rejected: Node didn't have enough resource: cpu, requested: 100000, used: 0, capacity: ") ||
		len(got.Status.ContainerStatuses) != 0 || len(got.Status.Conditions) != 0 || got.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("rejected pod status %+v, want Failed OutOfcpu with the kubelet's message, nothing else", got.Status)
	}
	var warned bool
	for _, c := range h.take() {
		if ev, ok := c.object.(*corev1.Event); ok && ev.InvolvedObject.Name == "big" {
			warned = ev.Type == corev1.EventTypeWarning && ev.Reason == "OutOfcpu" && strings.HasPrefix(ev.Message, "Node didn't have enough resource: cpu")
		}
	}
	if !warned {
		t.Errorf("no Warning OutOfcpu Event about the rejected pod")
	}
	if p := h.pod("fits"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod on a node tainted NoSchedule: %s, want Running", p.Status.Phase)
	}
}

// A Job's pod runs its `sleep` and Succeeds; the kubelet does not delete it.
func TestJobPodSucceeds(t *testing.T) {
	h, a := startKubelet(t, "")
	pod := kubeletPod(t, h, "job-1", func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.Containers[0].Command = []string{"sleep", "20"}
	})
	a.ObservePod(pod)
	h.advance(15 * time.Second)
	if p := h.pod("job-1"); p.Status.Phase != corev1.PodRunning {
		t.Fatalf("at 15 s: %s, want Running", p.Status.Phase)
	}
	h.advance(26 * time.Second)
	p := h.pod("job-1")
	cs := p.Status.ContainerStatuses
	if p.Status.Phase != corev1.PodSucceeded || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.Reason != "Completed" ||
		!cs[0].State.Terminated.FinishedAt.Time.Equal(t0.Add(25*time.Second)) {
		t.Errorf("at 26 s: %+v, want Succeeded, the container Completed at 25 s", p.Status)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted") {
			t.Errorf("Ready %+v, want False PodCompleted", c)
		}
		if c.Type == corev1.PodInitialized && (c.Status != corev1.ConditionTrue || c.Reason != "PodCompleted") {
			t.Errorf("Initialized %+v, want True PodCompleted", c)
		}
	}
	for _, c := range h.take() {
		if c.verb == "delete" {
			t.Errorf("the kubelet deleted a completed pod")
		}
	}
}

// A restarted kubelet finds its pods again: their containers kept running, so the status it
// reports is the one the server has, and it sends no patch, only the status manager's GETs.
func TestRestartedKubeletFindsItsPods(t *testing.T) {
	h, a := startKubelet(t, "")
	a.ObservePod(kubeletPod(t, h, "web-1", nil))
	h.advance(10 * time.Second)
	before := h.pod("web-1").Status
	h.take()
	a.Stop()
	h.advance(time.Minute)
	a.Start(h.ctx)
	h.advance(2 * time.Minute)
	reqs, _ := podCalls(h.take())
	if strings.Contains(strings.Join(reqs, ";"), "patch") || !strings.Contains(strings.Join(reqs, ";"), "get pods") {
		t.Errorf("requests after the restart %v, want a GET and no patch", reqs)
	}
	after := h.pod("web-1").Status
	if after.ContainerStatuses[0].RestartCount != 0 || !after.ContainerStatuses[0].State.Running.StartedAt.Equal(&before.ContainerStatuses[0].State.Running.StartedAt) {
		t.Errorf("container after the restart %+v, want the one running before", after.ContainerStatuses[0])
	}
}

// Annotations that do not parse get a Warning Event on the pod and are counted; the pod runs with
// the fleet's timing.
func TestBadAnnotationEvent(t *testing.T) {
	h, a := startKubelet(t, "")
	a.ObservePod(kubeletPod(t, h, "odd", func(p *corev1.Pod) {
		p.Annotations = map[string]string{PodAnnotationReady: "later"}
	}))
	h.advance(10 * time.Second)
	var msg string
	for _, c := range h.take() {
		if ev, ok := c.object.(*corev1.Event); ok && ev.Reason == reasonInvalidAnnotation {
			msg = ev.Type + " " + ev.Message
		}
	}
	if !strings.Contains(msg, `Warning Ignored annotations that do not parse: fakelet.dev/ready-delay="later"`) {
		t.Errorf("event %q, want a Warning naming the annotation", msg)
	}
	if n := a.Stats().PodAnnotationErrors; n != 1 {
		t.Errorf("%d annotation errors counted, want 1", n)
	}
	if p := h.pod("odd"); !runningReady(p) {
		t.Errorf("pod %s, want Running and Ready", p.Status.Phase)
	}
}

// A crash fault restarts the containers with the kubelet's backoff, through the API: the status
// shows CrashLoopBackOff and the restarts, and a BackOff Warning is recorded; cleared, the pod is
// Running and Ready again.
func TestPodFaultCrash(t *testing.T) {
	h, a := startKubelet(t, "")
	a.ObservePod(kubeletPod(t, h, "web-1", nil))
	h.advance(10 * time.Second)
	a.SetPodFault(PodFault{Crash: true, ExitCode: 137})
	h.advance(15 * time.Second)
	cs := h.pod("web-1").Status.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount != 1 ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 137 {
		t.Errorf("container %+v, want in CrashLoopBackOff after a restart, last exit 137", cs)
	}
	backoff := false
	for _, c := range h.take() {
		if ev, ok := c.object.(*corev1.Event); ok && ev.Reason == reasonBackOff && ev.Type == corev1.EventTypeWarning {
			backoff = true
		}
	}
	if !backoff {
		t.Errorf("no BackOff Warning")
	}
	a.SetPodFault(PodFault{})
	h.advance(time.Minute)
	if p := h.pod("web-1"); !runningReady(p) || p.Status.ContainerStatuses[0].RestartCount != 2 {
		t.Errorf("fault cleared: %s, %d restarts, want Running and Ready after its second restart", p.Status.Phase, p.Status.ContainerStatuses[0].RestartCount)
	}
}

// The kubelet footprint's pods come from the agent's own pod watch, decoded into pods: a pod listed
// runs, one missing from the next list is gone, a DELETED one too.
func TestPodsFromOwnWatch(t *testing.T) {
	h, a, w := kubeletAgent(t)
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	var pods *fakeWatch
	for _, fw := range w.take() {
		if fw.req.Resource == "pods" {
			pods = fw
		}
	}
	if pods == nil || !pods.req.Pods {
		t.Fatalf("pod watch %+v, want one that decodes pods", pods)
	}
	p1 := kubeletPod(t, h, "p1", func(p *corev1.Pod) { p.Spec.NodeName = a.Name() })
	p2 := kubeletPod(t, h, "p2", func(p *corev1.Pod) { p.Spec.NodeName = a.Name() })
	pods.h.Opened(nil)
	pods.h.Event(WatchEvent{Type: EventAdded, ResourceVersion: "10", Pod: p1})
	pods.h.Event(WatchEvent{Type: EventAdded, ResourceVersion: "11", Pod: p2})
	pods.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "12", InitialEventsEnd: true})
	h.advance(10 * time.Second)
	if !runningReady(h.pod("p1")) || !runningReady(h.pod("p2")) {
		t.Fatalf("listed pods not Running and Ready")
	}
	pods.h.Event(WatchEvent{Type: EventDeleted, ResourceVersion: "13", Pod: p1})
	if known, _ := a.Pods(); known != 1 {
		t.Errorf("%d pods known after p1's DELETED, want 1", known)
	}
	pods.h.Ended(nil) // the server's timeout: a watch from rv 13, then broken, a new list without p2
	h.advance(11 * time.Second)
	for _, fw := range w.take() {
		if fw.req.Resource == "pods" {
			fw.h.Opened(nil)
			fw.h.Ended(errVeryShortWatch)
		}
	}
	h.advance(15 * time.Second)
	for _, fw := range w.take() {
		if fw.req.Resource == "pods" && fw.req.Query.Get("sendInitialEvents") == "true" {
			fw.h.Opened(nil)
			fw.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "20", InitialEventsEnd: true})
		}
	}
	if known, _ := a.Pods(); known != 0 {
		t.Errorf("%d pods known after a list without them, want 0", known)
	}
}

// A deleted pod whose containers take longer than its grace period to exit after their SIGTERM
// (fakelet.dev/stop-delay) stays Terminating, Running and not ready, until the kubelet kills them at
// the end of the period (exit 137, Failed), then is deleted; one that exits within it ends 0.
func TestGracefulDeletion(t *testing.T) {
	for _, tc := range []struct {
		delay string
		grace int64
		gone  time.Duration // after the deletion
		code  int32
	}{
		{"5s", 30, 5 * time.Second, 0},
		{"1m", 10, 10 * time.Second, 137},
	} {
		h, a := startKubelet(t, "")
		pod := kubeletPod(t, h, "web-1", func(p *corev1.Pod) {
			p.Annotations = map[string]string{PodAnnotationStopDelay: tc.delay}
			p.Spec.TerminationGracePeriodSeconds = &tc.grace
		})
		a.ObservePod(pod)
		h.advance(10 * time.Second)
		deleting := h.pod("web-1")
		deleting.DeletionTimestamp = &metav1.Time{Time: h.clock.Now()}
		deleting.DeletionGracePeriodSeconds = &tc.grace
		if _, err := h.client.CoreV1().Pods("ns").Update(context.Background(), deleting, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		a.ObservePod(deleting)
		h.advance(10*time.Second + tc.gone - time.Second)
		if p := h.pod("web-1"); p.Status.Phase != corev1.PodRunning || conditions.PodReady(p) {
			t.Errorf("stop delay %s, grace %d: a second before the end, %s ready %v, want Running, not ready", tc.delay, tc.grace, p.Status.Phase, conditions.PodReady(p))
		}
		var code int32 = -1
		h.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			p, _ := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "web-1")
			if t := p.(*corev1.Pod).Status.ContainerStatuses[0].State.Terminated; t != nil {
				code = t.ExitCode
			}
			return false, nil, nil
		})
		h.advance(10*time.Second + tc.gone)
		if _, err := h.client.CoreV1().Pods("ns").Get(context.Background(), "web-1", metav1.GetOptions{}); err == nil || code != tc.code {
			t.Errorf("stop delay %s, grace %d: at the end, deleted %v with exit code %d, want deleted with %d", tc.delay, tc.grace, err != nil, code, tc.code)
		}
	}
}

// A just bound pod's first sync refused (the node authorizer's graph lags the watches: 403 "no
// relationship found between node and this object") is retried at its next status change, as the
// status manager's next batch does: the Running report a relist later goes through, not 10 s later.
func TestRefusedSyncRetriedAtTheNextChange(t *testing.T) {
	h, a := startKubelet(t, "10.244.3.0/24")
	pod := kubeletPod(t, h, "web-1", nil)
	refused := 0
	h.client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refused > 0 {
			return false, nil, nil
		}
		refused++
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "web-1", errors.New("node: no relationship found between node 'fakelet-00003' and this object"))
	})
	h.take()
	a.ObservePod(pod)
	h.advance(6500 * time.Millisecond) // the registration's 5 s, and a relist after the admission
	if p := h.pod("web-1"); refused != 1 || p.Status.Phase != corev1.PodRunning || !conditions.PodReady(p) {
		t.Errorf("after a refused first GET and a relist: %d refused, phase %s, Ready %v; want Running and Ready", refused, p.Status.Phase, conditions.PodReady(p))
	}
}
