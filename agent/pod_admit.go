package agent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// The kubelet's admission of a pod (pkg/kubelet/lifecycle/predicate.go, v1.37.2): the scheduler's
// AdmissionCheck (resources, required node affinity and node selector, node name, host ports), then
// the node's NoExecute taints; NoSchedule taints are the scheduler's business, not the kubelet's.
// Only the first failure is reported, as the kubelet's rejectPod reports it.

// nodeUse is what the admitted pods that are not terminated take of the node.
type nodeUse struct {
	pods        int
	cpu, memory int64
	hostPorts   map[string]bool
}

// admission returns why the kubelet rejects pod on node with use taken, or "" if it admits it.
func admission(pod *corev1.Pod, s *podSpec, node *corev1.Node, use nodeUse) (reason, message string) {
	alloc := node.Status.Allocatable
	insufficient := func(name string, requested, used, capacity int64) (string, string) {
		return "OutOf" + name, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			name, requested, used, capacity)
	}
	if q, ok := alloc[corev1.ResourcePods]; ok && int64(use.pods)+1 > q.Value() {
		return insufficient("pods", 1, int64(use.pods), q.Value())
	}
	if q, ok := alloc[corev1.ResourceCPU]; s.cpu > 0 && (!ok || s.cpu > q.MilliValue()-use.cpu) {
		return insufficient("cpu", s.cpu, use.cpu, q.MilliValue())
	}
	if q, ok := alloc[corev1.ResourceMemory]; s.memory > 0 && (!ok || s.memory > q.Value()-use.memory) {
		return insufficient("memory", s.memory, use.memory, q.Value())
	}
	predicate := func(name, desc string) (string, string) {
		return name, fmt.Sprintf("Predicate %s failed: %s", name, desc)
	}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return predicate("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return predicate("NodeName", "node(s) didn't match the requested node name")
	}
	for _, p := range s.hostPorts {
		if use.hostPorts[p] {
			return predicate("NodePorts", "node(s) didn't have free ports for the requested pod ports")
		}
	}
	if _, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }, false); bad {
		return predicate("TaintToleration", "node(s) had taints that the pod didn't tolerate")
	}
	return "", ""
}

// take adds an admitted pod's requests to use.
func (u *nodeUse) take(s *podSpec) {
	u.pods++
	u.cpu += s.cpu
	u.memory += s.memory
	for _, p := range s.hostPorts {
		if u.hostPorts == nil {
			u.hostPorts = map[string]bool{}
		}
		u.hostPorts[p] = true
	}
}
