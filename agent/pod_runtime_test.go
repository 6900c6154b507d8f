package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// runtimePod admits pod at t0 and returns its state, ready to advance.
func runtimePod(t *testing.T, pod *corev1.Pod, timing PodTiming) *podState {
	t.Helper()
	st := &podState{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, spec: compactSpec(pod, timing), admitted: true}
	st.admit(t0)
	return st
}

// runTo advances st to t0+d, as the pod loop does, at every due relist on the way (the
// runtime's steps are visible only at relists), under fault.
func runTo(st *podState, d time.Duration, fault PodFault) {
	at := t0
	for !st.terminal {
		next := st.advance(at, fault)
		if next.IsZero() {
			return
		}
		at = st.relistAfter(next)
		if at.After(t0.Add(d)) {
			st.advance(t0.Add(d), fault)
			return
		}
	}
}

func onePod(restart corev1.RestartPolicy, annotations map[string]string, c corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", Annotations: annotations},
		Spec: corev1.PodSpec{RestartPolicy: restart, Containers: []corev1.Container{c}}}
}

// The sequence of a pod with an init container, under the hollow kubelet's timing: Pending while
// the sandbox is made (the first relist, 1 s), the init container done at once, then the container
// running and ready, in one relist.
func TestRuntimeInitThenContainers(t *testing.T) {
	pod := onePod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "app", Image: "app:1"})
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
	st := runtimePod(t, pod, PodTiming{})
	if next := st.advance(t0, PodFault{}); st.view.phase != corev1.PodPending || st.view.sandbox || !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("at admission: phase %s sandbox %v next %v, want Pending, no sandbox, the first relist", st.view.phase, st.view.sandbox, next)
	}
	if c := st.view.ctrs[0]; c.state != ctrWaiting || c.wait != waitInitializing {
		t.Errorf("container before its init container: %+v, want waiting PodInitializing", c)
	}
	st.advance(t0.Add(time.Second), PodFault{})
	if st.view.phase != corev1.PodRunning || !st.view.sandbox {
		t.Fatalf("after the first relist: %s, want Running", st.view.phase)
	}
	if i := st.view.init[0]; i.state != ctrExited || i.exitCode != 0 || !i.ready {
		t.Errorf("init container %+v, want exited 0 and ready", i)
	}
	if c := st.view.ctrs[0]; c.state != ctrRunning || !c.ready || !c.started || !c.from.Equal(t0) {
		t.Errorf("container %+v, want running and ready since t0", c)
	}
}

// Delays: an image pull of 3 s, a start of 2 s and readiness 4 s after: running at 5 s, seen at the
// 5 s relist; ready at 9 s.
func TestRuntimeDelays(t *testing.T) {
	pod := onePod(corev1.RestartPolicyAlways, map[string]string{PodAnnotationReady: "4s"}, corev1.Container{Name: "app", Image: "app"})
	st := runtimePod(t, pod, PodTiming{ImagePull: 3 * time.Second, Start: 2 * time.Second, Ready: time.Second})
	runTo(st, 4*time.Second, PodFault{})
	if c := st.view.ctrs[0]; c.state != ctrWaiting || c.wait != waitCreating {
		t.Fatalf("at 4 s: %+v, want still being created", c)
	}
	runTo(st, 5*time.Second, PodFault{})
	if c := st.view.ctrs[0]; c.state != ctrRunning || c.ready || !c.from.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("at 5 s: %+v, want running since 5 s, not ready", c)
	}
	runTo(st, 9*time.Second, PodFault{})
	if !st.view.ctrs[0].ready {
		t.Errorf("at 9 s: not ready, want ready (the annotation's 4 s after it ran)")
	}
}

// A Job's pod: restartPolicy Never runs for its `sleep` argument (clusterloader2's batch pods), or
// the annotation's run duration, or the fleet's, then Succeeds; with an exit code it Fails; with
// OnFailure a failed container restarts.
func TestRuntimePodsThatComplete(t *testing.T) {
	for _, tc := range []struct {
		name        string
		restart     corev1.RestartPolicy
		annotations map[string]string
		c           corev1.Container
		fleet       time.Duration
		at          time.Duration // when it ends
		phase       corev1.PodPhase
	}{
		{"sleep", corev1.RestartPolicyNever, nil, corev1.Container{Name: "c", Command: []string{"sleep"}, Args: []string{"30"}}, 0, 30 * time.Second, corev1.PodSucceeded},
		{"sleep in sh", corev1.RestartPolicyNever, nil, corev1.Container{Name: "c", Command: []string{"/bin/sleep", "2m"}}, 0, 2 * time.Minute, corev1.PodSucceeded},
		{"annotation", corev1.RestartPolicyOnFailure, map[string]string{PodAnnotationRunDuration: "45s"}, corev1.Container{Name: "c"}, 0, 45 * time.Second, corev1.PodSucceeded},
		{"fleet", corev1.RestartPolicyNever, nil, corev1.Container{Name: "c"}, 20 * time.Second, 20 * time.Second, corev1.PodSucceeded},
		{"at once", corev1.RestartPolicyNever, nil, corev1.Container{Name: "c"}, 0, time.Second, corev1.PodSucceeded},
		{"fails", corev1.RestartPolicyNever, map[string]string{PodAnnotationExitCode: "3", PodAnnotationRunDuration: "10s"}, corev1.Container{Name: "c"}, 0, 10 * time.Second, corev1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := runtimePod(t, onePod(tc.restart, tc.annotations, tc.c), PodTiming{RunDuration: tc.fleet})
			runTo(st, tc.at-time.Millisecond, PodFault{})
			if tc.at > time.Second && st.view.phase != corev1.PodRunning {
				t.Fatalf("before its end: %s, want Running", st.view.phase)
			}
			runTo(st, tc.at, PodFault{})
			c := st.view.ctrs[0]
			if st.view.phase != tc.phase || !st.terminal || c.state != ctrExited || st.view.sandbox {
				t.Fatalf("at its end: %s, container %+v, want %s, exited, the sandbox stopped", st.view.phase, c, tc.phase)
			}
		})
	}
	st := runtimePod(t, onePod(corev1.RestartPolicyOnFailure, map[string]string{PodAnnotationExitCode: "1", PodAnnotationRunDuration: "5s"},
		corev1.Container{Name: "c"}), PodTiming{})
	runTo(st, 10*time.Second, PodFault{})
	if c := st.view.ctrs[0]; st.view.phase != corev1.PodRunning || c.restarts == 0 {
		t.Errorf("OnFailure, exit 1: %s, %d restarts, want Running and restarted", st.view.phase, c.restarts)
	}
}

// A container that keeps failing restarts as the kubelet's CrashLoopBackOff has it: at once, then
// 10, 20, 40, 80, 160, 300, 300 s after each exit; while it waits its state is CrashLoopBackOff,
// with the last exit in lastState; after 10 minutes without an exit the backoff starts over.
func TestRuntimeCrashLoopBackOff(t *testing.T) {
	pod := onePod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "c", Image: "app"})
	st := runtimePod(t, pod, PodTiming{})
	runTo(st, 5*time.Second, PodFault{})
	crash := PodFault{Crash: true, ExitCode: 2}
	// The fault lands at 5 s: the container exits, restarts at once, exits again and waits 10 s.
	st.advance(t0.Add(5*time.Second), crash)
	c := st.view.ctrs[0]
	if c.state != ctrWaiting || c.wait != waitCrashLoop || c.restarts != 1 || !c.hasLast || c.lastCode != 2 || c.backoff != crashLoopInitial {
		t.Fatalf("after the fault: %+v, want waiting in CrashLoopBackOff (10 s) after one restart, last exit 2", c)
	}
	status := st.ctrStatus(&st.spec.ctrs[0], &c)
	if w := status.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || w.Message != "back-off 10s restarting failed container=c pod=p_ns(u)" ||
		status.LastTerminationState.Terminated == nil || status.LastTerminationState.Terminated.ExitCode != 2 ||
		status.LastTerminationState.Terminated.Reason != "Error" || status.RestartCount != 1 || status.Ready {
		t.Errorf("status %+v, want the kubelet's CrashLoopBackOff", status)
	}
	// Restarts: each exit at its start, the next restart a backoff later.
	at := 5 * time.Second
	for _, backoff := range []time.Duration{10, 20, 40, 80, 160, 300, 300} {
		at += backoff * time.Second
		st.advance(t0.Add(at-time.Millisecond), crash)
		if c := st.view.ctrs[0]; c.state != ctrWaiting || c.wait != waitCrashLoop {
			t.Fatalf("%v: restarted before its backoff of %ds ended: %+v", at, backoff, c)
		}
		before := st.view.ctrs[0].restarts
		st.advance(t0.Add(at), crash)
		if c := st.view.ctrs[0]; c.restarts != before+1 {
			t.Fatalf("%v: %d restarts, want %d after a backoff of %ds", at, c.restarts, before+1, backoff)
		}
	}
	// The fault cleared: the container restarts at the end of its backoff and runs.
	at += 300 * time.Second
	st.advance(t0.Add(at), PodFault{})
	if c := st.view.ctrs[0]; c.state != ctrRunning || !c.ready || st.view.phase != corev1.PodRunning {
		t.Fatalf("fault cleared: %+v, want running and ready", c)
	}
	// Ten minutes later it fails once more: the backoff was forgotten, it restarts at once.
	at += 11 * time.Minute
	st.advance(t0.Add(at), crash)
	if c := st.view.ctrs[0]; c.state != ctrWaiting || c.backoff != crashLoopInitial {
		t.Errorf("a failure 11 minutes after the last: %+v, want a restart at once, then 10 s", c)
	}
}

// Unready keeps the containers running, not ready, which turns the pod's Ready False; cleared, they
// are ready again.
func TestRuntimeUnready(t *testing.T) {
	st := runtimePod(t, onePod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "c"}), PodTiming{})
	runTo(st, 2*time.Second, PodFault{})
	st.advance(t0.Add(3*time.Second), PodFault{Unready: true})
	conds := st.conditions()
	if c := st.view.ctrs[0]; c.state != ctrRunning || c.ready || conds[2].status || conds[2].reason != "ContainersNotReady" {
		t.Fatalf("unready: %+v, Ready %+v, want running, not ready", c, conds[2])
	}
	st.advance(t0.Add(4*time.Second), PodFault{})
	if !st.view.ctrs[0].ready || !st.conditions()[2].status {
		t.Errorf("cleared: not ready")
	}
}

// A deleted pod's containers stop at once on their SIGTERM: the pod ends Succeeded, even with
// restartPolicy Always; one whose container had failed ends Failed.
func TestRuntimeStop(t *testing.T) {
	st := runtimePod(t, onePod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "c"}), PodTiming{})
	runTo(st, 2*time.Second, PodFault{})
	st.deleting = true
	st.stop(t0.Add(3*time.Second), 0)
	if c := st.view.ctrs[0]; st.view.phase != corev1.PodSucceeded || c.state != ctrExited || c.exitCode != 0 || st.view.sandbox {
		t.Errorf("stopped: %s %+v, want Succeeded, exited 0", st.view.phase, c)
	}
	st = runtimePod(t, onePod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "c"}), PodTiming{})
	runTo(st, 2*time.Second, PodFault{})
	st.advance(t0.Add(2*time.Second), PodFault{Crash: true})
	st.deleting = true
	st.stop(t0.Add(3*time.Second), 0)
	if st.view.phase != corev1.PodFailed {
		t.Errorf("stopped while crash-looping: %s, want Failed", st.view.phase)
	}
}

// Annotations that do not parse are named, and the fleet's timing is used instead.
func TestBadAnnotations(t *testing.T) {
	pod := onePod(corev1.RestartPolicyNever, map[string]string{PodAnnotationStart: "soon", PodAnnotationExitCode: "-1"}, corev1.Container{Name: "c"})
	s := compactSpec(pod, PodTiming{Start: time.Second})
	if s.timing.Start != time.Second || s.exitCode != 0 ||
		!strings.Contains(s.badAnnotations, `fakelet.dev/start-delay="soon"`) || !strings.Contains(s.badAnnotations, `fakelet.dev/exit-code="-1"`) {
		t.Errorf("spec %+v, want both annotations named and the fleet's start delay", s)
	}
}

// The kubelet's admission: the first failure, with its reason and message.
func TestAdmission(t *testing.T) {
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "test"})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"zone": "a"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: tmpl.Allocatable}}
	cpu := tmpl.Allocatable.Cpu().MilliValue()
	requests := func(cpu, mem string) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resourceQuantity(cpu), corev1.ResourceMemory: resourceQuantity(mem)}}}
	}
	for _, tc := range []struct {
		name    string
		pod     func(*corev1.Pod)
		use     nodeUse
		reason  string
		message string
	}{
		{"fits, NoSchedule ignored", func(*corev1.Pod) {}, nodeUse{}, "", ""},
		{"cpu", func(p *corev1.Pod) { p.Spec.Containers[0] = requests("500m", "1Mi") }, nodeUse{pods: 3, cpu: cpu - 100},
			"OutOfcpu", fmt.Sprintf("Node didn't have enough resource: cpu, requested: 500, used: %d, capacity: %d", cpu-100, cpu)},
		{"memory", func(p *corev1.Pod) { p.Spec.Containers[0] = requests("1m", "1000Gi") }, nodeUse{},
			"OutOfmemory", "Node didn't have enough resource: memory, requested: 1073741824000, used: 0, capacity: " + fmt.Sprint(tmpl.Allocatable.Memory().Value())},
		{"pods", func(*corev1.Pod) {}, nodeUse{pods: 110}, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"},
		{"node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }, nodeUse{},
			"NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"c"}}}}}}}}
		}, nodeUse{}, "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"host port", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 80, ContainerPort: 80}}
		},
			nodeUse{hostPorts: map[string]bool{"/TCP/80": true}}, "NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
	} {
		pod := onePod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "c"})
		pod.Spec.NodeName = "n"
		tc.pod(pod)
		reason, message := admission(pod, compactSpec(pod, PodTiming{}), node, tc.use)
		if reason != tc.reason || message != tc.message {
			t.Errorf("%s: %q %q, want %q %q", tc.name, reason, message, tc.reason, tc.message)
		}
	}
	tainted := node.DeepCopy()
	tainted.Spec.Taints = append(tainted.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
	pod := onePod(corev1.RestartPolicyAlways, nil, corev1.Container{Name: "c"})
	if reason, _ := admission(pod, compactSpec(pod, PodTiming{}), tainted, nodeUse{}); reason != "TaintToleration" {
		t.Errorf("untolerated NoExecute taint: %q, want TaintToleration", reason)
	}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](300)}}
	if reason, _ := admission(pod, compactSpec(pod, PodTiming{}), tainted, nodeUse{}); reason != "" {
		t.Errorf("tolerated NoExecute taint: %q, want admitted", reason)
	}
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }
