package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/report"
	"fakelet.dev/fakelet/scenario"
)

// podToleration is the pods' toleration of the unreachable NoExecute taint in TestPodsMarkedNotReady
// AndEvicted: long enough that a node stopped for a little more than the grace period keeps its pods
// (its eviction would come 15 s after its start at the earliest), short enough that the long stop's
// come 20 s before the phase ends.
const podToleration = 40

// TestPodsMarkedNotReadyAndEvicted plays a profile with pods on the shared control plane. Two nodes
// stop for long: the real node lifecycle controller marks their pods not Ready, taints them
// unreachable:NoExecute, and the taint eviction controller deletes their pods once the toleration has
// passed. A third node stops for a little more than the grace period: its pods are marked not Ready,
// not evicted, and Ready again once its kubelet starts. A fourth reports Ready=False: tainted
// not-ready:NoExecute, its pods are evicted after the same toleration, and its running kubelet
// finishes their deletion. The report's reactions say all of it.
func TestPodsMarkedNotReadyAndEvicted(t *testing.T) {
	outage := gracePeriod + 75*time.Second
	profile := fmt.Sprintf(`apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: e2e-pods}
spec:
  nodes: 10
  podsPerNode: 2
  podTolerationSeconds: %d
  groups:
    long: {indexes: "0-1"}
    short: {indexes: "2"}
    sick: {indexes: "3"}
  phases:
  - name: steady
    duration: 5s
  - name: outage
    duration: %v
    actions:
    - {group: long, do: stop}
    - {group: short, do: stop, at: %v}
    - {group: sick, do: notReady}
  - name: recovery
    duration: 30s
    actions:
    - {group: long, do: start}
    - {group: short, do: start}
    - {group: sick, do: ready}
`, podToleration, outage, outage-gracePeriod-15*time.Second)
	p, err := profiles.Parse("e2e-pods.yaml", []byte(profile))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Resolve(p.Fleet())
	if err != nil {
		t.Fatal(err)
	}
	c := admin(t, controlPlane(t))
	cfg := fleet.Config{
		Nodes: plan.Nodes, Fleet: "pods", NamePrefix: "pods", Zones: 1, ZoneOf: profiles.ZoneOf,
		RegisterQPS: 50, Template: agent.TemplateOptions{Images: 5},
		PodsPerNode: p.Spec.PodsPerNode, PodTolerationSeconds: p.Spec.PodTolerationSeconds,
	}
	session := measure.New(measure.Options{})
	f, err := fleet.New(fleettest.Resolve(t, cfg), controlPlane(t).AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	session.Observe(f)
	t.Cleanup(func() { // after the fleet's stop and cleanup: cleanups run last first
		if pods, err := c.CoreV1().Pods(fleetname.PodNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: fleetname.Label + "=pods"}); err != nil || len(pods.Items) != 0 {
			t.Errorf("%d of the fleet's pods left after its cleanup (%v)", len(pods.Items), err)
		}
	})
	runInBackground(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := session.Start(ctx, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	onPhase, onApplied := session.Hooks(plan, f)
	runner, err := scenario.New(scenario.Config{Plan: plan, Fleet: f, Log: testLog{t}, OnPhase: onPhase, OnApplied: onApplied})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	if err := runner.Run(runCtx); err != nil {
		t.Fatalf("profile run: %v", err)
	}
	rec := runner.Record()
	if rec.ReadyTimedOut {
		t.Errorf("the phases began before every node and pod was Ready")
	}
	session.UsePhases(measure.ScenarioPhases(rec))
	session.Stop()

	pod := func(node, i int) (*corev1.Pod, error) {
		return c.CoreV1().Pods(fleetname.PodNamespace).Get(context.Background(), fleet.PodName(fleetname.NodeName("pods", node), i), metav1.GetOptions{})
	}
	// The pods that kept running, and the short outage's, are Running and Ready; the evicted ones stay gone.
	eventually(t, 30*time.Second, "the pods of nodes 2 and 4-9 Running and Ready", func() (bool, error) {
		for n := 2; n < 10; n++ {
			if n == 3 {
				continue
			}
			for i := range 2 {
				p, err := pod(n, i)
				if err != nil || p.Status.Phase != corev1.PodRunning || !podIsReady(p) {
					return false, err
				}
			}
		}
		return true, nil
	})
	for _, n := range []int{0, 1, 3} {
		for i := range 2 {
			if p, err := pod(n, i); !apierrors.IsNotFound(err) {
				t.Errorf("evicted pod of node %d: %v (deletion %v), want it gone and not recreated", n, err, p.GetDeletionTimestamp())
			}
		}
	}
	p0, err := pod(2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p0.Spec.Tolerations) != 2 || p0.Spec.Tolerations[0].TolerationSeconds == nil || *p0.Spec.Tolerations[0].TolerationSeconds != podToleration {
		t.Errorf("tolerations %+v, want not-ready and unreachable for %d s (the admission's default not added)", p0.Spec.Tolerations, podToleration)
	}

	r := report.Build(session.Record("e2e-pods", record.Parameters{}, record.Versions{}, record.Target{}))
	sum := func(phase, group, event string) reaction.Summary {
		for _, s := range r.Reactions {
			if s.Phase == phase && s.Group == group && s.Event == event {
				return s
			}
		}
		return reaction.Summary{}
	}
	for _, tc := range []struct {
		phase, group, event string
		reacted             int
	}{
		{"outage", "long", reaction.PodNotReady, 2},
		{"outage", "long", reaction.PodEvicted, 2},
		{"outage", "short", reaction.PodNotReady, 1},
		{"outage", "short", reaction.PodEvicted, 0},
		{"recovery", "short", reaction.PodReady, 1},
		{"recovery", "long", reaction.PodReady, 0},
		{"outage", "sick", reaction.PodEvicted, 1},
	} {
		s := sum(tc.phase, tc.group, tc.event)
		if s.Reacted != tc.reacted || s.Missing != 0 {
			t.Errorf("%s %s %s: reacted %d, missing %d; want %d and none", tc.phase, tc.group, tc.event, s.Reacted, s.Missing, tc.reacted)
			continue
		}
		if s.Reacted > 0 {
			t.Logf("%s %s %s: %d, from the action p50 %.1f s max %.1f s", tc.phase, tc.group, tc.event, s.Reacted, s.FromAction.P50, s.FromAction.Max)
		}
	}
	if s := sum("outage", "sick", reaction.PodNotReady); s.Reacted > 0 {
		t.Logf("outage sick pod_not_ready: %d, from the action p50 %.1f s", s.Reacted, s.FromAction.P50)
	} else {
		t.Logf("outage sick: the node's pods were not marked not Ready (its kubelet reports Ready=False itself)")
	}
	// The controller marks the pods in the pass that marks the node Unknown; the eviction comes at
	// least the toleration after the NoExecute taint. Pods and Nodes are seen on watches of their own,
	// whose events may arrive in either order, so the pods may be seen a moment before the node.
	if s, u := sum("outage", "long", reaction.PodNotReady), sum("outage", "long", reaction.ReadyUnknown); s.Reacted > 0 &&
		(s.FromAction.Min < u.FromAction.Min-1 || s.FromAction.Max > u.FromAction.Max+10) {
		t.Errorf("pods marked not Ready %+v s after the stop, the node Unknown %+v s", s.FromAction, u.FromAction)
	}
	if e, ne := sum("outage", "long", reaction.PodEvicted), sum("outage", "long", "taint_unreachable_noexecute_added"); e.Reacted > 0 &&
		e.FromAction.Min < ne.FromAction.Min+podToleration-1 {
		t.Errorf("pods evicted %+v s after the stop, the NoExecute taint %+v s: sooner than the %d s toleration", e.FromAction, ne.FromAction, podToleration)
	}
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
