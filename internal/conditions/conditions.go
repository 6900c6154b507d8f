// Package conditions reads Node and Pod conditions as the kubelet and the controllers do: a Node or
// Pod is Ready when its Ready condition is True, and not when it is False, Unknown or missing. The
// agents, the fleet and the measurement read them alike, so the one reading is here.
package conditions

import corev1 "k8s.io/api/core/v1"

// Node is the condition of type t in conds, or nil: a pointer into conds, so that the caller may
// change it in place.
func Node(conds []corev1.NodeCondition, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// NodeReady says whether n's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	c := Node(n.Status.Conditions, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// PodReady says whether p's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
