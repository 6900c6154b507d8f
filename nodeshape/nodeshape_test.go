package nodeshape

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseLabel(t *testing.T) {
	for _, tc := range []struct {
		in      string
		key     string
		value   string
		wantErr string
	}{
		{in: "pool=big", key: "pool", value: "big"},
		{in: "example.com/team=", key: "example.com/team", value: ""},
		{in: "node-role.kubernetes.io/worker=", wantErr: "NodeRestriction"}, // kubeadm labels roles as an admin, after registration
		{in: "node.kubernetes.io/instance-type=m5.large", key: "node.kubernetes.io/instance-type", value: "m5.large"},
		{in: "kubelet.kubernetes.io/x=y", key: "kubelet.kubernetes.io/x", value: "y"},
		{in: "topology.kubernetes.io/region=eu", key: "topology.kubernetes.io/region", value: "eu"},
		{in: "pool", wantErr: `label "pool": want KEY=VALUE`},
		{in: "bad key=x", wantErr: `label key "bad key"`},
		{in: "pool=not ok", wantErr: `label pool value "not ok"`},
		{in: "node-restriction.kubernetes.io/pool=a", wantErr: "a kubelet may not register its Node with a kubernetes.io or k8s.io label"},
		{in: "kubernetes.io/role=master", wantErr: "NodeRestriction"},
		{in: "example.k8s.io/a=b", wantErr: "NodeRestriction"},
		{in: "kubernetes.io/hostname=other", wantErr: "set by fakelet itself"},
		{in: "topology.kubernetes.io/zone=z", wantErr: "--zones"},
		{in: "fakelet.dev/fleet=other", wantErr: "set by fakelet itself"},
	} {
		k, v, err := ParseLabel(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseLabel(%q) = %v, want an error with %q", tc.in, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("ParseLabel(%q): %v", tc.in, err)
		case k != tc.key || v != tc.value:
			t.Errorf("ParseLabel(%q) = %q, %q; want %q, %q", tc.in, k, v, tc.key, tc.value)
		}
	}
}

func TestParseTaint(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    corev1.Taint
		wantErr string
	}{
		{in: "dedicated=infra:NoSchedule", want: corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}},
		{in: "example.com/gpu:NoExecute", want: corev1.Taint{Key: "example.com/gpu", Effect: corev1.TaintEffectNoExecute}},
		{in: "a=b:PreferNoSchedule", want: corev1.Taint{Key: "a", Value: "b", Effect: corev1.TaintEffectPreferNoSchedule}},
		{in: "dedicated=infra", wantErr: "want KEY=VALUE:EFFECT or KEY:EFFECT"},
		{in: "dedicated=infra:noschedule", wantErr: `effect "noschedule": want one of NoSchedule, PreferNoSchedule, NoExecute`},
		{in: "=x:NoSchedule", wantErr: `taint key ""`},
		{in: "k=a b:NoSchedule", wantErr: `taint k value "a b"`},
		{in: "node.kubernetes.io/not-ready:NoExecute", wantErr: "the control plane's"},
	} {
		got, err := ParseTaint(tc.in)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseTaint(%q) = %v, want an error with %q", tc.in, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("ParseTaint(%q): %v", tc.in, err)
		case !reflect.DeepEqual(got, tc.want):
			t.Errorf("ParseTaint(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseAllocatable(t *testing.T) {
	got, err := ParseAllocatable("cpu=4,memory=16Gi,pods=50")
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("16Gi"), "pods": resource.MustParse("50")}
	if !equalLists(got, want) {
		t.Errorf("ParseAllocatable = %v, want %v", got, want)
	}
	for in, wantErr := range map[string]string{
		"cpu":                 "want NAME=QUANTITY",
		"cpu=four":            `allocatable cpu "four"`,
		"cpu=0":               "must be more than 0",
		"memory=-1Gi":         "must be more than 0",
		"pods=1.5":            "whole number",
		"pods=251":            "at most 250",
		"ephemeral-storage=1": "fakelet sets only cpu, memory, pods",
		"cpu=1,cpu=2":         "given twice",
	} {
		if _, err := ParseAllocatable(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseAllocatable(%q) = %v, want an error with %q", in, err, wantErr)
		}
	}
}

func TestOver(t *testing.T) {
	fleet := Shape{
		Labels:      map[string]string{"pool": "general", "team": "a"},
		Taints:      []corev1.Taint{{Key: "dedicated", Value: "fleet", Effect: corev1.TaintEffectNoSchedule}, {Key: "x", Effect: corev1.TaintEffectNoExecute}},
		Allocatable: corev1.ResourceList{"cpu": resource.MustParse("8"), "pods": resource.MustParse("110")},
	}
	group := Shape{
		Labels:      map[string]string{"pool": "big"},
		Taints:      []corev1.Taint{{Key: "dedicated", Value: "big", Effect: corev1.TaintEffectNoSchedule}, {Key: "dedicated", Effect: corev1.TaintEffectNoExecute}},
		Allocatable: corev1.ResourceList{"cpu": resource.MustParse("32")},
	}
	got := group.Over(fleet)
	want := Shape{
		Labels: map[string]string{"pool": "big", "team": "a"},
		Taints: []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoExecute},
			{Key: "dedicated", Value: "big", Effect: corev1.TaintEffectNoSchedule}, {Key: "dedicated", Effect: corev1.TaintEffectNoExecute}},
		Allocatable: corev1.ResourceList{"cpu": resource.MustParse("32"), "pods": resource.MustParse("110")},
	}
	if !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Taints, want.Taints) || !equalLists(got.Allocatable, want.Allocatable) {
		t.Errorf("Over =\n%+v\nwant\n%+v", got, want)
	}
	if fleet.Labels["pool"] != "general" || len(fleet.Taints) != 2 || fleet.Allocatable.Cpu().String() != "8" {
		t.Errorf("Over changed the base: %+v", fleet)
	}
	if zero := (Shape{}).Over(Shape{}); !zero.IsZero() {
		t.Errorf("the zero shape over the zero shape = %+v", zero)
	}
}

func TestLists(t *testing.T) {
	capacity := corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("32879408Ki"), "pods": resource.MustParse("110"),
		"ephemeral-storage": resource.MustParse("101430960Ki")}
	allocatable := corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("32777008Ki"), "pods": resource.MustParse("110"),
		"ephemeral-storage": resource.MustParse("93478772582")}
	c, a := (Shape{}).Lists(capacity, allocatable)
	if !equalLists(c, capacity) || !equalLists(a, allocatable) {
		t.Errorf("the zero shape's lists are not the defaults")
	}
	s := Shape{Allocatable: corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("4Gi"), "pods": resource.MustParse("30")}}
	c, a = s.Lists(capacity, allocatable)
	// A kubelet with the default eviction threshold (memory.available 100Mi) and no reservations.
	wantCap := corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("4196Mi"), "pods": resource.MustParse("30"),
		"ephemeral-storage": resource.MustParse("101430960Ki")}
	wantAlloc := corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("4Gi"), "pods": resource.MustParse("30"),
		"ephemeral-storage": resource.MustParse("93478772582")}
	if !equalLists(c, wantCap) || !equalLists(a, wantAlloc) {
		t.Errorf("Lists = capacity %v, allocatable %v; want %v, %v", c, a, wantCap, wantAlloc)
	}
	if allocatable.Cpu().String() != "8" {
		t.Error("Lists changed the defaults")
	}
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, qa := range a {
		if qb, ok := b[k]; !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}
