package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/nodeshape"
)

// TestShapedNodesRegisterAndSteerPods: the kubelets register with the fleet's labels, taints and
// allocatable, one group with its own laid over them, as the Node authorizer and NodeRestriction let
// a kubelet register (taints and these labels only at creation); the controller manager gives each
// a podCIDR; and the scheduler places a pod that tolerates the taints and selects the group's label
// on the group's node, and none that tolerates nothing.
func TestShapedNodesRegisterAndSteerPods(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	fake := corev1.Taint{Key: "fakelet.dev/fake", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "example.com/dedicated", Value: "big", Effect: corev1.TaintEffectNoSchedule}
	fleetShape := nodeshape.Shape{Allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}}
	capacity, allocatable := fleetShape.Lists(agent.DefaultCapacity(), agent.DefaultAllocatable())
	big := nodeshape.Shape{
		Labels:      map[string]string{"example.com/pool": "big", "node.kubernetes.io/instance-type": "x-large"},
		Taints:      []corev1.Taint{dedicated},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse("250")},
	}
	rf := startFleet(t, fleet.Config{Nodes: 3, Fleet: "shape", NamePrefix: "shape", RegisterQPS: 50, Template: agent.TemplateOptions{
		Images: 5, Labels: map[string]string{"example.com/pool": "general"}, Taints: []corev1.Taint{fake},
		Capacity: capacity, Allocatable: allocatable,
		Groups: []nodeshape.Shape{big}, GroupOf: func(index int) int {
			if index == 1 {
				return 0
			}
			return -1
		},
	}})
	eventually(t, time.Minute, "3 shaped nodes Ready with a podCIDR", func() (bool, error) {
		if rf.Progress().Ready < 3 {
			return false, nil
		}
		for _, n := range fleetNodes(t, c, "shape") {
			if n.Spec.PodCIDR == "" {
				return false, nil
			}
		}
		return true, nil
	})
	for _, n := range fleetNodes(t, c, "shape") {
		wantPool, wantTaints, wantCPU := "general", []corev1.Taint{fake}, "8"
		if n.Name == "shape-00001" {
			wantPool, wantTaints, wantCPU = "big", []corev1.Taint{fake, dedicated}, "64"
		}
		if n.Labels["example.com/pool"] != wantPool {
			t.Errorf("%s: pool %q, want %q", n.Name, n.Labels["example.com/pool"], wantPool)
		}
		if !sameTaints(n.Spec.Taints, wantTaints) {
			t.Errorf("%s: taints %v, want %v", n.Name, n.Spec.Taints, wantTaints)
		}
		if cpu := n.Status.Allocatable[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse(wantCPU)) != 0 {
			t.Errorf("%s: allocatable cpu %s, want %s", n.Name, cpu.String(), wantCPU)
		}
		if mem := n.Status.Allocatable[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("16Gi")) != 0 {
			t.Errorf("%s: allocatable memory %s, want 16Gi", n.Name, mem.String())
		}
	}

	ctx := t.Context()
	pause := []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}
	steered := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shape-steered"}, Spec: corev1.PodSpec{
		Containers: pause, NodeSelector: map[string]string{"example.com/pool": "big"},
		Tolerations: []corev1.Toleration{{Key: fake.Key, Operator: corev1.TolerationOpExists}, {Key: dedicated.Key, Operator: corev1.TolerationOpExists}},
	}}
	kept := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shape-kept-off"}, Spec: corev1.PodSpec{
		Containers: pause, NodeSelector: map[string]string{fleetname.Label: "shape"},
	}}
	for _, p := range []*corev1.Pod{steered, kept} {
		eventually(t, 30*time.Second, "create pod "+p.Name, func() (bool, error) {
			// Admission refuses pods until the namespace's default ServiceAccount exists.
			_, err := c.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, p, metav1.CreateOptions{})
			return err == nil, nil
		})
		t.Cleanup(func() {
			c.CoreV1().Pods(metav1.NamespaceDefault).Delete(context.Background(), p.Name, *metav1.NewDeleteOptions(0))
		})
	}
	eventually(t, 30*time.Second, "the steered pod bound and the other refused by the scheduler", func() (bool, error) {
		s, err := c.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, steered.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		k, err := c.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, kept.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Spec.NodeName != "" && unschedulable(k), nil
	})
	if s, _ := c.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, steered.Name, metav1.GetOptions{}); s.Spec.NodeName != "shape-00001" {
		t.Errorf("the pod selecting pool big is on %q, want shape-00001", s.Spec.NodeName)
	}
	if k, _ := c.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, kept.Name, metav1.GetOptions{}); k.Spec.NodeName != "" {
		t.Errorf("the pod tolerating nothing is on %s", k.Spec.NodeName)
	}
}

// unschedulable tells whether the scheduler said it found no node for p.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// sameTaints compares the taints of a Node (a) with those it registered with (b), by key, value and
// effect, in any order, leaving out the control plane's (the not-ready taint that admission adds
// at creation, until the node lifecycle controller sees the node Ready).
func sameTaints(a, b []corev1.Taint) bool {
	a = slices.DeleteFunc(slices.Clone(a), func(t corev1.Taint) bool { return strings.HasPrefix(t.Key, "node.kubernetes.io/") })
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			if x.Key == y.Key && x.Value == y.Value && x.Effect == y.Effect {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
