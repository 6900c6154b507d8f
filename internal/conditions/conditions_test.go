package conditions

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReadyIsTrueAlone(t *testing.T) {
	for _, tc := range []struct {
		status corev1.ConditionStatus
		has    bool
		want   bool
	}{
		{corev1.ConditionTrue, true, true},
		{corev1.ConditionFalse, true, false},
		{corev1.ConditionUnknown, true, false},
		{"", false, false},
	} {
		n := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}}}
		p := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}}}
		if tc.has {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: tc.status})
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: tc.status})
		}
		if got := NodeReady(n); got != tc.want {
			t.Errorf("node Ready %q (present %v): NodeReady %v, want %v", tc.status, tc.has, got, tc.want)
		}
		if got := PodReady(p); got != tc.want {
			t.Errorf("pod Ready %q (present %v): PodReady %v, want %v", tc.status, tc.has, got, tc.want)
		}
	}
}

func TestNodePointsIntoTheConditions(t *testing.T) {
	conds := []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure}, {Type: corev1.NodeReady}}
	Node(conds, corev1.NodeReady).Status = corev1.ConditionTrue
	if conds[1].Status != corev1.ConditionTrue {
		t.Errorf("the change through Node's pointer is not in the conditions: %+v", conds)
	}
	if c := Node(conds, corev1.NodeDiskPressure); c != nil {
		t.Errorf("Node of a missing type: %+v", c)
	}
}
