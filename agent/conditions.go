package agent

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/internal/conditions"
)

// conditionTypes are the conditions a kubelet reports, in the kubelet's order.
var conditionTypes = [4]corev1.NodeConditionType{
	corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady,
}

// conditionText is the kubelet's reason and message for each condition when false and when true.
var conditionText = map[corev1.NodeConditionType][2][2]string{
	corev1.NodeMemoryPressure: {
		{"KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
	},
	corev1.NodeDiskPressure: {
		{"KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"KubeletHasDiskPressure", "kubelet has disk pressure"},
	},
	corev1.NodePIDPressure: {
		{"KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{"KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
	},
	corev1.NodeReady: {
		{"KubeletNotReady", "container runtime is down"},
		{"KubeletReady", "kubelet is posting ready status"},
	},
}

// Health is what the kubelet believes about its node: what its conditions say.
type Health struct {
	NotReady       bool
	NotReadyReason string // default KubeletNotReady
	NotReadyMsg    string // default "container runtime is down"
	MemoryPressure bool
	DiskPressure   bool
	PIDPressure    bool
}

func (h *Health) condition(t corev1.NodeConditionType) (status corev1.ConditionStatus, reason, message string) {
	var on bool
	switch t {
	case corev1.NodeMemoryPressure:
		on = h.MemoryPressure
	case corev1.NodeDiskPressure:
		on = h.DiskPressure
	case corev1.NodePIDPressure:
		on = h.PIDPressure
	case corev1.NodeReady:
		on = !h.NotReady
	}
	text := conditionText[t][0]
	status = corev1.ConditionFalse
	if on {
		text = conditionText[t][1]
		status = corev1.ConditionTrue
	}
	reason, message = text[0], text[1]
	if t == corev1.NodeReady && h.NotReady {
		if h.NotReadyReason != "" {
			reason = h.NotReadyReason
		}
		if h.NotReadyMsg != "" {
			message = h.NotReadyMsg
		}
	}
	return status, reason, message
}

// conditions computes the node's conditions as the kubelet's setters do: they update the server's list
// in place (so its order and anyone else's conditions stay), append missing ones in kubelet order, set
// every heartbeat time to now, and move a transition time only when a status changes.
func (h *Health) conditions(previous []corev1.NodeCondition, now metav1.Time) []corev1.NodeCondition {
	out := make([]corev1.NodeCondition, len(previous), len(previous)+len(conditionTypes))
	copy(out, previous)
	for _, t := range conditionTypes {
		status, reason, message := h.condition(t)
		c := conditions.Node(out, t)
		if c == nil {
			out = append(out, corev1.NodeCondition{Type: t, LastTransitionTime: now})
			c = &out[len(out)-1]
		} else if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message, c.LastHeartbeatTime = status, reason, message, now
	}
	return out
}

// conditionsChanged is the kubelet's nodeConditionsHaveChanged: any difference, by type, but heartbeat
// times.
func conditionsChanged(a, b []corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range b {
		y := &b[i]
		x := conditions.Node(a, y.Type)
		if x == nil || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			!x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return true
		}
	}
	return false
}
