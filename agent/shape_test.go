package agent

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/nodeshape"
)

// withTemplate runs a harness's agents with a template of o.
func withTemplate(t *testing.T, o TemplateOptions) harnessOption {
	t.Helper()
	tmpl, err := NewTemplate(o)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.Template = tmpl }
}

// A fleet's labels and taints, and a group's laid over them, are on the Node each agent registers,
// as a kubelet's --node-labels and --register-with-taints put them there; a group's allocatable is
// its Nodes' status.
func TestNodesRegisterWithTheirShape(t *testing.T) {
	noSchedule := corev1.Taint{Key: "example.com/dedicated", Value: "fleet", Effect: corev1.TaintEffectNoSchedule}
	big := nodeshape.Shape{
		Labels: map[string]string{"example.com/pool": "big", "node.kubernetes.io/instance-type": "x-large"},
		Taints: []corev1.Taint{{Key: "example.com/dedicated", Value: "big", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/gpu", Effect: corev1.TaintEffectNoExecute}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse("250")},
	}
	fleetAlloc := nodeshape.Shape{Allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}}
	capacity, allocatable := fleetAlloc.Lists(DefaultCapacity(), DefaultAllocatable())
	h := newHarness(t, withTemplate(t, TemplateOptions{
		Fleet: "test", Images: MaxImages,
		Labels: map[string]string{"example.com/pool": "general", "example.com/team": "a"}, Taints: []corev1.Taint{noSchedule},
		Capacity: capacity, Allocatable: allocatable,
		Groups: []nodeshape.Shape{big}, GroupOf: func(index int) int {
			if index == 1 {
				return 0
			}
			return -1
		},
	}))
	plain, shaped := h.agent("fakelet-00000", 0), h.agent("fakelet-00001", 1)
	plain.Start(h.ctx)
	shaped.Start(h.ctx)
	h.advance(time.Second)

	n := h.node("fakelet-00000")
	if n.Labels["example.com/pool"] != "general" || n.Labels["example.com/team"] != "a" || n.Labels[fleetname.Label] != "test" {
		t.Errorf("labels %v, want the fleet's and fakelet's", n.Labels)
	}
	if !reflect.DeepEqual(n.Spec.Taints, []corev1.Taint{noSchedule}) {
		t.Errorf("taints %v, want the fleet's %v", n.Spec.Taints, noSchedule)
	}
	if got := n.Status.Allocatable[corev1.ResourceMemory]; got.Cmp(resource.MustParse("16Gi")) != 0 {
		t.Errorf("allocatable memory %s, want 16Gi", got.String())
	}
	if got := n.Status.Capacity[corev1.ResourceMemory]; got.Cmp(resource.MustParse("16484Mi")) != 0 {
		t.Errorf("capacity memory %s, want 16Gi and the kubelet's 100Mi eviction threshold", got.String())
	}
	if got := n.Status.Allocatable[corev1.ResourceCPU]; got.Cmp(resource.MustParse("8")) != 0 {
		t.Errorf("allocatable cpu %s, want the default 8", got.String())
	}

	g := h.node("fakelet-00001")
	if g.Labels["example.com/pool"] != "big" || g.Labels["example.com/team"] != "a" || g.Labels["node.kubernetes.io/instance-type"] != "x-large" ||
		g.Labels[corev1.LabelHostname] != "fakelet-00001" {
		t.Errorf("group node's labels %v, want the group's over the fleet's", g.Labels)
	}
	wantTaints := []corev1.Taint{big.Taints[0], big.Taints[1]}
	if !reflect.DeepEqual(g.Spec.Taints, wantTaints) {
		t.Errorf("group node's taints %v, want %v (the group's replaces the fleet's of the same key and effect)", g.Spec.Taints, wantTaints)
	}
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "64", corev1.ResourcePods: "250", corev1.ResourceMemory: "16Gi"} {
		if got := g.Status.Allocatable[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("group node's allocatable %s = %s, want %s", name, got.String(), want)
		}
	}
	if got := shaped.Allocatable()[corev1.ResourcePods]; got.Value() != 250 {
		t.Errorf("Agent.Allocatable pods = %s, want the group's 250", got.String())
	}
	if !reflect.DeepEqual(plain.Taints(), []corev1.Taint{noSchedule}) {
		t.Errorf("Agent.Taints = %v", plain.Taints())
	}

	// The status loop patches nothing while a shaped Node is as registered.
	before := len(patchesOf(h.take()))
	h.advance(time.Minute)
	if after := patchesOf(h.take()); len(after) != 0 {
		t.Errorf("%d status patches a minute after registration (%d at it), want none: the shape reads as a change", len(after), before)
	}
}

// Compaction keeps one copy of each shape's resource lists for the Nodes of that shape.
func TestCompactSharesEachShapesResources(t *testing.T) {
	big := nodeshape.Shape{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}}
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "test", Groups: []nodeshape.Shape{big}, GroupOf: func(int) int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{Status: corev1.NodeStatus{Capacity: tmpl.groups[0].capacity.DeepCopy(), Allocatable: tmpl.groups[0].allocatable.DeepCopy()}}
	tmpl.Compact(n)
	if !sameMap(n.Status.Capacity, tmpl.groups[0].capacity) || !sameMap(n.Status.Allocatable, tmpl.groups[0].allocatable) {
		t.Error("a group Node's resource lists were not replaced by the group's")
	}
}

func TestTemplateRefusesWhatAKubeletCannotRegister(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       TemplateOptions
		wantErr string
	}{
		{"fleet label", TemplateOptions{Labels: map[string]string{fleetname.Label: "x"}}, "set by fakelet itself"},
		{"kubernetes.io label", TemplateOptions{Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}, "NodeRestriction"},
		{"bad taint", TemplateOptions{Taints: []corev1.Taint{{Key: "a", Effect: "Sometimes"}}}, `effect "Sometimes"`},
		{"group without GroupOf", TemplateOptions{Groups: []nodeshape.Shape{{}}}, "no GroupOf"},
		{"group label", TemplateOptions{Groups: []nodeshape.Shape{{Labels: map[string]string{"kubernetes.io/hostname": "x"}}}, GroupOf: func(int) int { return 0 }},
			"node shape 0: label kubernetes.io/hostname is set by fakelet itself"},
		{"group pods", TemplateOptions{Groups: []nodeshape.Shape{{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1000")}}},
			GroupOf: func(int) int { return 0 }}, "at most 250"},
	} {
		tc.o.Fleet = "test"
		if _, err := NewTemplate(tc.o); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: NewTemplate = %v, want an error with %q", tc.name, err, tc.wantErr)
		}
	}
}
