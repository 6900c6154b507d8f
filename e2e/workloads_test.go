package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/measure/workload"
	"fakelet.dev/fakelet/report"
	"fakelet.dev/fakelet/scenario"
)

// TestPodsOfAnyoneRun: pods the fleet did not create, bound to its nodes by spec.nodeName (as the
// scheduler binds them), run as a kubelet runs them: a bare pod is Running and Ready with an IP, a
// pod asking for more CPU than the node has fails OutOfcpu, a pod with restartPolicy Never running
// `sleep 3` Succeeds; deleted, the running pod's kubelet finishes its deletion. In the kubelet
// footprint the agents learn of the pods from their own pod watches, in the heartbeat footprint from
// the fleet's one watch of bound pods.
func TestPodsOfAnyoneRun(t *testing.T) {
	for _, fp := range []agent.Footprint{agent.FootprintKubelet, agent.FootprintHeartbeat} {
		t.Run(string(fp), func(t *testing.T) { podsOfAnyoneRun(t, fp) })
	}
}

func podsOfAnyoneRun(t *testing.T, fp agent.Footprint) {
	c := admin(t, controlPlane(t))
	prefix := "wl" + string(fp[0])
	f, err := fleet.New(fleettest.Resolve(t, fleet.Config{Nodes: 2, Fleet: prefix, NamePrefix: prefix, RegisterQPS: 50, Footprint: fp,
		Template: agent.TemplateOptions{Images: 5}}), controlPlane(t).AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	runInBackground(t, f)
	ctx := context.Background()
	eventually(t, time.Minute, "the default ServiceAccount", func() (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	pods := c.CoreV1().Pods(metav1.NamespaceDefault)
	node := fleetname.NodeName(prefix, 1)
	create := func(name string, mutate func(*corev1.Pod)) {
		name = prefix + name
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		if mutate != nil {
			mutate(p)
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete pod %s: %v", name, err)
			}
		})
	}
	create("-bare", nil)
	create("-big", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
	})
	create("-job", func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.Containers[0].Image = "busybox"
		p.Spec.Containers[0].Command = []string{"sleep", "3"}
	})
	get := func(name string) *corev1.Pod {
		p, err := pods.Get(ctx, prefix+name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	eventually(t, time.Minute, "the bare pod Running and Ready", func() (bool, error) {
		p := get("-bare")
		return p.Status.Phase == corev1.PodRunning && podIsReady(p) && p.Status.PodIP != "", nil
	})
	eventually(t, 30*time.Second, "the big pod Failed", func() (bool, error) { return get("-big").Status.Phase == corev1.PodFailed, nil })
	if p := get("-big"); p.Status.Reason != "OutOfcpu" || !strings.HasPrefix(p.Status.Message, "Pod was rejected: Node didn't have enough resource: cpu") {
		t.Errorf("big pod: reason %q message %q, want OutOfcpu", p.Status.Reason, p.Status.Message)
	}
	eventually(t, 30*time.Second, "the Never pod Succeeded", func() (bool, error) { return get("-job").Status.Phase == corev1.PodSucceeded, nil })

	// A user deletes the running pod with its grace period: its kubelet stops it and deletes it.
	if err := pods.Delete(ctx, prefix+"-bare", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the deleted pod gone", func() (bool, error) {
		_, err := pods.Get(ctx, prefix+"-bare", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// workloadsFleet starts a fleet of n nodes of the default (kubelet) footprint on the shared control
// plane, and a namespace of the test's own for its workloads, deleted at its end.
func workloadsFleet(t *testing.T, name string, n int) (kubernetes.Interface, *runningFleet, string) {
	t.Helper()
	c := admin(t, controlPlane(t))
	rf := startFleet(t, fleet.Config{Nodes: n, Fleet: name, NamePrefix: name, RegisterQPS: 50, Template: agent.TemplateOptions{Images: 5}})
	rf.waitReady(t, n, time.Minute)
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	// Pods are refused until the controller manager has made the namespace's default ServiceAccount.
	eventually(t, 30*time.Second, "the namespace's default ServiceAccount", func() (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return c, rf, name
}

// onFleet is a pod template for the scheduler to place on fleet's nodes only, labelled app: name.
func onFleet(fleetName, name string, restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector:                 map[string]string{fleetname.Label: fleetName},
			RestartPolicy:                restart,
			AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}},
		},
	}
}

func listPods(t *testing.T, c kubernetes.Interface, ns, app string) []corev1.Pod {
	t.Helper()
	l, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// TestDeploymentWithServiceOnTheFleet: a Deployment the scheduler places on fakelet nodes has every
// replica Running and Ready with an IP from its node's podCIDR, and its Service's EndpointSlices hold
// every pod's address, ready.
func TestDeploymentWithServiceOnTheFleet(t *testing.T) {
	const replicas = 6
	c, _, ns := workloadsFleet(t, "wldeploy", 3)
	ctx := context.Background()
	n := int32(replicas)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: onFleet("wldeploy", "web", corev1.RestartPolicyAlways)}}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "every replica available", func() (bool, error) {
		d, err := c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == replicas && d.Status.ReadyReplicas == replicas, err
	})
	ips := map[string]string{} // pod IP -> pod
	for _, p := range listPods(t, c, ns, "web") {
		if p.Status.Phase != corev1.PodRunning || !podIsReady(&p) || p.Status.PodIP == "" || !strings.HasPrefix(p.Spec.NodeName, "wldeploy-") {
			t.Errorf("pod %s on %q: phase %s, Ready %v, IP %q; want Running and Ready with an IP on a fleet node",
				p.Name, p.Spec.NodeName, p.Status.Phase, podIsReady(&p), p.Status.PodIP)
		}
		node, err := c.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, cidr, err := net.ParseCIDR(node.Spec.PodCIDR); err != nil || !cidr.Contains(net.ParseIP(p.Status.PodIP)) {
			t.Errorf("pod %s has IP %s, outside its node %s's podCIDR %q", p.Name, p.Status.PodIP, node.Name, node.Spec.PodCIDR)
		}
		ips[p.Status.PodIP] = p.Name
	}
	if len(ips) != replicas {
		t.Errorf("%d distinct pod IPs for %d replicas: %v", len(ips), replicas, ips)
	}
	eventually(t, 30*time.Second, "every pod's address ready in the Service's EndpointSlices", func() (bool, error) {
		l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err
		}
		ready := map[string]bool{}
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				for _, a := range e.Addresses {
					ready[a] = e.Conditions.Ready != nil && *e.Conditions.Ready
				}
			}
		}
		for ip := range ips {
			if !ready[ip] {
				return false, nil
			}
		}
		return len(ready) == replicas, nil
	})
}

// TestJobCompletesOnTheFleet: a Job's pods, placed by the scheduler, run their `sleep 2` and
// Succeed, and the Job is Complete.
func TestJobCompletesOnTheFleet(t *testing.T) {
	const completions = 4
	c, _, ns := workloadsFleet(t, "wljob", 2)
	ctx := context.Background()
	n := int32(completions)
	tmpl := onFleet("wljob", "batch", corev1.RestartPolicyNever)
	tmpl.Spec.Containers[0].Image = "busybox"
	tmpl.Spec.Containers[0].Command = []string{"sleep", "2"}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Spec: batchv1.JobSpec{Parallelism: &n, Completions: &n, Template: tmpl}}
	if _, err := c.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the Job Complete", func() (bool, error) {
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "batch", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
				return false, fmt.Errorf("job failed: %s: %s", cond.Reason, cond.Message)
			}
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return j.Status.Succeeded == completions, nil
			}
		}
		return false, nil
	})
	pods := listPods(t, c, ns, "batch")
	if len(pods) != completions {
		t.Errorf("%d pods for %d completions", len(pods), completions)
	}
	for _, p := range pods {
		cs := p.Status.ContainerStatuses
		if p.Status.Phase != corev1.PodSucceeded || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.Reason != "Completed" {
			t.Errorf("pod %s: phase %s, container statuses %+v; want Succeeded, terminated Completed", p.Name, p.Status.Phase, cs)
			continue
		}
		if ran := cs[0].State.Terminated.FinishedAt.Sub(cs[0].State.Terminated.StartedAt.Time); ran < time.Second {
			t.Errorf("pod %s ran %v, want its sleep 2", p.Name, ran)
		}
	}
}

// TestDaemonSetCoversTheFleet: a DaemonSet has one pod Ready on every node of the fleet.
func TestDaemonSetCoversTheFleet(t *testing.T) {
	const nodes = 6
	c, _, ns := workloadsFleet(t, "wlds", nodes)
	ctx := context.Background()
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
		Template: onFleet("wlds", "agent", corev1.RestartPolicyAlways)}}
	if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the DaemonSet Ready on every node", func() (bool, error) {
		ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := ds.Status
		return s.DesiredNumberScheduled == nodes && s.CurrentNumberScheduled == nodes && s.NumberReady == nodes && s.NumberAvailable == nodes, nil
	})
	on := map[string]bool{}
	for _, p := range listPods(t, c, ns, "agent") {
		on[p.Spec.NodeName] = true
	}
	for i := range nodes {
		if name := fleetname.NodeName("wlds", i); !on[name] {
			t.Errorf("no DaemonSet pod on %s (pods on %v)", name, on)
		}
	}
}

// TestCrashingContainerBacksOff: a container that exits 1 half a second after it starts, in a pod the
// scheduler placed, restarts at once the first time and then after the kubelet's 10 s
// CrashLoopBackOff, waiting with that reason meanwhile; its pod stays Running.
func TestCrashingContainerBacksOff(t *testing.T) {
	c, _, ns := workloadsFleet(t, "wlcrash", 2)
	ctx := context.Background()
	tmpl := onFleet("wlcrash", "crash", corev1.RestartPolicyAlways)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crash", Labels: tmpl.Labels,
		Annotations: map[string]string{agent.PodAnnotationExitCode: "1", agent.PodAnnotationRunDuration: "500ms"}}, Spec: tmpl.Spec}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	restarts := map[int32]time.Time{} // restartCount -> when first seen
	var backOff, phases []string
	eventually(t, time.Minute, "a second restart", func() (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "crash", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, err
		}
		cs := p.Status.ContainerStatuses[0]
		if _, ok := restarts[cs.RestartCount]; !ok {
			restarts[cs.RestartCount] = time.Now()
		}
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" && len(backOff) == 0 {
			backOff = append(backOff, w.Message)
		}
		if cs.RestartCount > 0 && string(p.Status.Phase) != "Running" {
			phases = append(phases, string(p.Status.Phase))
		}
		if cs.RestartCount > 0 && (cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1) {
			return false, fmt.Errorf("restarted container's last state %+v, want terminated with exit code 1", cs.LastTerminationState)
		}
		return cs.RestartCount >= 2, nil
	})
	if len(backOff) == 0 || !strings.HasPrefix(backOff[0], "back-off 10s restarting failed container=main pod=crash_"+ns) {
		t.Errorf("waiting CrashLoopBackOff messages seen %q, want the kubelet's back-off 10s", backOff)
	}
	if len(phases) > 0 {
		t.Errorf("pod phases while restarting: %v, want Running", phases)
	}
	// Polled every 200 ms: the first restart within a couple of relists of the exit, the second after
	// the 10 s backoff counted from the exit after the first.
	if first, second := restarts[1], restarts[2]; second.Sub(first) < 9*time.Second {
		t.Errorf("second restart %v after the first, want the kubelet's 10 s backoff", second.Sub(first))
	} else {
		t.Logf("second restart seen %v after the first", second.Sub(first))
	}
}

// wlOutagePhase is how long the stop lasts: the controller's grace period from the victims' last
// renewal (before the stop), its monitor period, the workload's 5 s toleration of the NoExecute
// taint, the replacements' scheduling and start (about 25 s after the stop in all, 2026-12-01), and
// room for a loaded machine.
const wlOutagePhase = gracePeriod + 30*time.Second

// TestWorkloadMovesOffStoppedNodes plays, with `fakelet run`, a profile of 9 nodes in 3 zones whose
// Deployment (one pod a node spread over the zones, as the built-in profiles' web, behind a Service,
// tolerating the NoExecute taints for 5 s) loses the nodes under a third of it: those pods are evicted, replaced on the other nodes, Running and Ready
// there, as the test sees through the apiserver during the run; and report.json's workloads section
// times each step of it from the stop.
func TestWorkloadMovesOffStoppedNodes(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	const nodes, victims = 9, 3
	profile := fmt.Sprintf(`apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: e2e-workload-outage}
spec:
  nodes: %d
  zones: 3
  groups:
    victims: {indexes: "0-2"}
  workloads:
    items:
    - {name: web, kind: Deployment, replicasPerNode: 1, requests: {cpu: 10m, memory: 16Mi}, spread: zone, tolerationSeconds: 5}
  phases:
  - name: steady
    duration: 10s
  - name: outage
    duration: %v
    actions:
    - {group: victims, do: stop}
  - name: recovery
    duration: 5s
    actions:
    - {group: victims, do: start}
`, nodes, wlOutagePhase)
	dir := t.TempDir()
	path := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(path, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	reportDir := filepath.Join(dir, "report")
	p := startFakelet(t, "run", "--kubeconfig", cp.Kubeconfig, "--profile", path, "--fleet", "wlmove", "--name-prefix", "wlmove",
		"--images", "5", "--metrics-addr", "", "--out", reportDir)
	victim := map[string]bool{}
	for i := range victims {
		victim[fleetname.NodeName("wlmove", i)] = true
	}

	// While the run lasts: every replica Running and Ready first, then, in the outage, the pods of the
	// victims being deleted and as many replicas Running and Ready on the other nodes.
	ctx := context.Background()
	var ns string
	eventually(t, 90*time.Second, "the run's workload namespace", func() (bool, error) {
		l, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: fleetname.Label + "=wlmove"})
		if err != nil || len(l.Items) == 0 {
			return false, err
		}
		ns = l.Items[0].Name
		return true, nil
	})
	webPods := func() []corev1.Pod {
		l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: scenario.WorkloadLabel + "=web"})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	eventually(t, 30*time.Second, "every replica Running and Ready", func() (bool, error) {
		ready := 0
		for _, p := range webPods() {
			if p.Status.Phase == corev1.PodRunning && podIsReady(&p) {
				ready++
			}
		}
		return ready == nodes, nil
	})
	perNode := map[string]int{}
	for _, p := range webPods() {
		perNode[p.Spec.NodeName]++
	}
	t.Logf("the Deployment's pods per node before the stop: %v", perNode)
	var moved []corev1.Pod
	eventually(t, 10*time.Second+wlOutagePhase, "the victims' pods evicted and replaced on the other nodes", func() (bool, error) {
		var evicted, elsewhere int
		moved = webPods()
		for _, p := range moved {
			switch {
			case p.DeletionTimestamp != nil && victim[p.Spec.NodeName]:
				evicted++
			case p.DeletionTimestamp == nil && !victim[p.Spec.NodeName] && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && podIsReady(&p):
				elsewhere++
			}
		}
		return evicted >= 1 && elsewhere == nodes, nil
	})
	for _, p := range moved {
		if p.DeletionTimestamp != nil && !hasDisruptionTarget(&p) {
			t.Errorf("evicted pod %s on %s has no DisruptionTarget condition: %+v", p.Name, p.Spec.NodeName, p.Status.Conditions)
		}
	}
	if code := p.wait(2 * time.Minute); code != 0 {
		t.Fatalf("fakelet run exit code %d (-1: still running after 2 m), want 0", code)
	}

	b, err := os.ReadFile(filepath.Join(reportDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Workloads == nil || len(r.Workloads.Reactions) != 1 {
		t.Fatalf("report.json workloads %+v, want the reaction to the one stop", r.Workloads)
	}
	re := r.Workloads.Reactions[0]
	t.Logf("reaction: %+v", re)
	if re.Phase != "outage" || re.Group != "victims" || re.Op != "stop" || re.Nodes != victims || re.Pods != victims {
		t.Errorf("reaction to %s on %s in %s: %d nodes, %d pods; want the stop of the 3 victims and their pod each", re.Op, re.Group, re.Phase, re.Nodes, re.Pods)
	}
	steps := map[string]workload.Step{}
	for _, s := range re.Steps {
		steps[s.Name] = s
	}
	for _, name := range []string{workload.StepNotReady, workload.StepEndpointNotReady, workload.StepEvicted, workload.StepReplacementCreated,
		workload.StepScheduledElsewhere, workload.StepReplacementRunning, workload.StepReplacementReady} {
		if s := steps[name]; s.Count != re.Pods {
			t.Errorf("step %s: %d of the %d pods on the victims; want all", name, s.Count, re.Pods)
		}
	}
	if s := steps[workload.StepDeploymentAvailable]; s.Count != 1 {
		t.Errorf("step %s: count %d, want the Deployment available again once", workload.StepDeploymentAvailable, s.Count)
	}
	// The order of the chain: not Ready after the grace period, evicted at least the toleration after
	// that, replaced after the eviction.
	if nr, ev := steps[workload.StepNotReady], steps[workload.StepEvicted]; nr.First < (gracePeriod-10*time.Second).Seconds() || ev.First < nr.First+4 {
		t.Errorf("pods not Ready from %.1f s after the stop, evicted from %.1f s: want not Ready after the %v grace period (less a renewal interval) and the eviction after the 5 s toleration",
			nr.First, ev.First, gracePeriod)
	}
	if ev, rr := steps[workload.StepEvicted], steps[workload.StepReplacementRunning]; rr.Last < ev.Last {
		t.Errorf("replacements Running by %.1f s, before the last eviction at %.1f s", rr.Last, ev.Last)
	}
	if re.Lost != 0 {
		t.Errorf("%d pods lost for good, want 0", re.Lost)
	}
}

func hasDisruptionTarget(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
