package observe

import (
	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/internal/conditions"
)

// PodHandler returns a handler for fleet.Fleet.OnPod: it records the fleet's pods turning Ready and
// NotReady, and their deletion (new nil: the pod is gone).
func (r *Recorder) PodHandler() func(old, new *corev1.Pod) {
	return r.ObservePod
}

// ObservePod records how pod n differs from old: old is nil when n was just seen for the first time,
// n is nil when the pod was deleted. A pod costs one transition when it first turns Ready, and one per
// change of readiness or deletion after that.
func (r *Recorder) ObservePod(old, n *corev1.Pod) {
	at := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.flush()
	switch {
	case n == nil:
		if old != nil && old.DeletionTimestamp == nil {
			r.addPod(Transition{At: at, Node: old.Spec.NodeName, Kind: PodDeleted, Type: old.Name, Reason: disruption(old)})
		}
		return
	case n.DeletionTimestamp != nil:
		if old == nil || old.DeletionTimestamp == nil {
			r.addPod(Transition{At: at, Node: n.Spec.NodeName, Kind: PodDeleted, Type: n.Name, Reason: disruption(n)})
		}
		return
	}
	was, is := old != nil && conditions.PodReady(old), conditions.PodReady(n)
	switch {
	case is && !was:
		r.addPod(Transition{At: at, Node: n.Spec.NodeName, Kind: PodReady, Type: n.Name})
	case was && !is:
		r.addPod(Transition{At: at, Node: n.Spec.NodeName, Kind: PodNotReady, Type: n.Name})
	}
}

// addPod is add for a pod's transition: its name is not interned, since no other transition has it.
// r.mu must be held.
func (r *Recorder) addPod(t Transition) {
	t.Node, t.Reason = r.intern(t.Node), r.intern(t.Reason)
	t.Type = string([]byte(t.Type))
	r.keep(t)
}

// disruption is the reason of p's DisruptionTarget condition, "" if it has none.
func disruption(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}
