package observe

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func node(ready corev1.ConditionStatus, reason string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n0"},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
			{Type: corev1.NodeReady, Status: ready, Reason: reason},
		}},
	}
}

var (
	notReadyNS    = corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	unreachableNS = corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule}
	unreachableNE = corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}
)

func TestRecorderKeepsTransitionsOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := testingclock.NewFakePassiveClock(t0)
	r := NewRecorder(clock)
	h := r.NodeHandler()
	seq := []*corev1.Node{
		node(corev1.ConditionFalse, "KubeletNotReady", notReadyNS),
		node(corev1.ConditionTrue, "KubeletReady", notReadyNS),
		node(corev1.ConditionTrue, "KubeletReady"),
		node(corev1.ConditionTrue, "KubeletReady"), // a heartbeat patch: nothing changed
		node(corev1.ConditionUnknown, "NodeStatusUnknown"),
		node(corev1.ConditionUnknown, "NodeStatusUnknown", unreachableNS, unreachableNE),
	}
	var old *corev1.Node
	for i, n := range seq {
		clock.SetTime(t0.Add(time.Duration(i) * time.Second))
		h(old, n)
		old = n
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	want := []Transition{
		{At: at(0), Node: "n0", Kind: Condition, Type: "MemoryPressure", Status: "False", Reason: "KubeletHasSufficientMemory"},
		{At: at(0), Node: "n0", Kind: Condition, Type: "Ready", Status: "False", Reason: "KubeletNotReady"},
		{At: at(0), Node: "n0", Kind: TaintAdded, Type: "node.kubernetes.io/not-ready", Status: "NoSchedule"},
		{At: at(1), Node: "n0", Kind: Condition, Type: "Ready", Status: "True", Reason: "KubeletReady"},
		{At: at(2), Node: "n0", Kind: TaintRemoved, Type: "node.kubernetes.io/not-ready", Status: "NoSchedule"},
		{At: at(4), Node: "n0", Kind: Condition, Type: "Ready", Status: "Unknown", Reason: "NodeStatusUnknown"},
		{At: at(5), Node: "n0", Kind: TaintAdded, Type: "node.kubernetes.io/unreachable", Status: "NoSchedule"},
		{At: at(5), Node: "n0", Kind: TaintAdded, Type: "node.kubernetes.io/unreachable", Status: "NoExecute"},
	}
	if got := r.Transitions(); !reflect.DeepEqual(got, want) {
		t.Errorf("transitions:\n got %+v\nwant %+v", got, want)
	}
}

func TestTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ts := []Transition{
		{At: at(0), Node: "a", Kind: Condition, Type: "Ready", Status: "False"},
		{At: at(1), Node: "a", Kind: Condition, Type: "Ready", Status: "True"},
		{At: at(0), Node: "b", Kind: Condition, Type: "Ready", Status: "True"},
		{At: at(0), Node: "b", Kind: Condition, Type: "MemoryPressure", Status: "False"},
		{At: at(3), Node: "b", Kind: Condition, Type: "Ready", Status: "Unknown"},
		{At: at(5), Node: "b", Kind: Condition, Type: "Ready", Status: "True"},
	}
	got := Timeline(ts, at(0), at(5), 2*time.Second)
	want := []StateCount{
		{At: at(0), Ready: 1, NotReady: 1},
		{At: at(2), Ready: 2},
		{At: at(4), Ready: 1, Unknown: 1},
		{At: at(5), Ready: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Timeline:\n got %+v\nwant %+v", got, want)
	}
}

// At 10,000 nodes a steady fleet's record must stay small: one entry per condition and taint a node
// started with, and no more for heartbeats.
func TestRecorderMemoryPerNode(t *testing.T) {
	r := NewRecorder(nil)
	n := node(corev1.ConditionTrue, "KubeletReady")
	for range 100 {
		r.ObserveNode(n, n)
	}
	if got := len(r.Transitions()); got != 0 {
		t.Errorf("%d transitions for unchanged nodes, want 0", got)
	}
}

func TestTainted(t *testing.T) {
	ts := []Transition{
		{Node: "a", Kind: TaintAdded, Type: "node.kubernetes.io/not-ready", Status: "NoSchedule"},
		{Node: "b", Kind: TaintAdded, Type: "node.kubernetes.io/not-ready", Status: "NoSchedule"},
		{Node: "a", Kind: TaintRemoved, Type: "node.kubernetes.io/not-ready", Status: "NoSchedule"},
		{Node: "b", Kind: TaintAdded, Type: "node.kubernetes.io/unreachable", Status: "NoExecute"},
		{Node: "b", Kind: TaintRemoved, Type: "node.kubernetes.io/not-ready", Status: "NoSchedule"},
	}
	if got := Tainted(ts); got != 1 {
		t.Errorf("Tainted = %d, want 1 (b still unreachable)", got)
	}
}
