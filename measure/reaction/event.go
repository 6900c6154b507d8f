package reaction

import (
	"strings"

	"fakelet.dev/fakelet/measure/observe"
)

// Event names of reactions, in the words of fakelet's metrics: ready_unknown, memory_pressure_true,
// taint_unreachable_noexecute_added, lease_recreated.
const (
	ReadyTrue      = "ready_true"
	ReadyFalse     = "ready_false"
	ReadyUnknown   = "ready_unknown"
	LeaseRecreated = "lease_recreated"
	// PodNotReady is a pod of the node marked not Ready (the node lifecycle controller's
	// MarkPodsNotReady), PodReady one Ready again (its kubelet reported it).
	PodNotReady = "pod_not_ready"
	PodReady    = "pod_ready"
	// PodEvicted is a pod of the node deleted by the taint eviction controller under a NoExecute taint
	// it no longer tolerates; PodDeleted one deleted by anyone else.
	PodEvicted = "pod_evicted"
	PodDeleted = "pod_deleted"
)

// taintEviction is the reason of the DisruptionTarget condition the taint eviction controller puts on
// a pod before it deletes it.
const taintEviction = "DeletionByTaintManager"

// taintPrefix is the prefix of the taints Kubernetes itself sets; event names leave it out.
const taintPrefix = "node.kubernetes.io/"

// Keys and effects of the node lifecycle controller's taints.
const (
	unreachable = taintPrefix + "unreachable"
	notReady    = taintPrefix + "not-ready"
	noSchedule  = "NoSchedule"
	noExecute   = "NoExecute"
)

// ConditionEvent names a condition turning to status: ("MemoryPressure", "True") is
// memory_pressure_true.
func ConditionEvent(condition, status string) string {
	return snake(condition) + "_" + strings.ToLower(status)
}

// TaintEvent names a taint added or removed: ("node.kubernetes.io/unreachable", "NoExecute", true) is
// taint_unreachable_noexecute_added.
func TaintEvent(key, effect string, added bool) string {
	verb := "_removed"
	if added {
		verb = "_added"
	}
	return "taint_" + snake(strings.TrimPrefix(key, taintPrefix)) + "_" + strings.ToLower(effect) + verb
}

// EventOf names the reaction a transition is, or "" for one that is none (a Lease deleted).
func EventOf(t observe.Transition) string {
	switch t.Kind {
	case observe.Condition:
		return ConditionEvent(t.Type, t.Status)
	case observe.TaintAdded:
		return TaintEvent(t.Type, t.Status, true)
	case observe.TaintRemoved:
		return TaintEvent(t.Type, t.Status, false)
	case observe.LeaseCreated:
		return LeaseRecreated
	case observe.PodReady:
		return PodReady
	case observe.PodNotReady:
		return PodNotReady
	case observe.PodDeleted:
		if t.Reason == taintEviction {
			return PodEvicted
		}
		return PodDeleted
	}
	return ""
}

// snake turns MemoryPressure, not-ready or example.com/key into memory_pressure, not_ready and
// example_com_key.
func snake(s string) string {
	rs := []rune(s)
	var b strings.Builder
	lower := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }
	upper := func(r rune) bool { return r >= 'A' && r <= 'Z' }
	sep := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	for i, r := range rs {
		switch {
		case upper(r):
			// A word starts at an upper-case letter after a lower-case one, or at the last capital
			// of an acronym: PIDPressure is pid_pressure.
			if i > 0 && (lower(rs[i-1]) || upper(rs[i-1]) && i+1 < len(rs) && lower(rs[i+1])) {
				sep()
			}
			b.WriteRune(r - 'A' + 'a')
		case lower(r):
			b.WriteRune(r)
		default:
			sep()
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}
