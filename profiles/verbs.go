package profiles

// Verb names what an action does to the nodes of its group. docs/profiles.md describes each one and
// what the control plane is expected to do about it.
type Verb string

const (
	// VerbStop: the kubelet dies. Its node stops renewing its Lease and patching its status.
	VerbStop Verb = "stop"
	// VerbStart: a restarted kubelet comes back: it re-registers and reports Ready=True.
	VerbStart Verb = "start"
	// VerbRestart {downtime}: the kubelet restarts, as after an upgrade: the process dies and a new
	// one starts downtime later (0 by default, as systemctl restart does), with none of the old one's
	// state: its watches list again, it re-runs the kubelet's startup sequence.
	VerbRestart Verb = "restart"
	// VerbFlap {period, duty, jitter}: stopped for duty x period, then running, in turn, until the phase
	// ends. Expanded into stop and start events by the schedule.
	VerbFlap Verb = "flap"
	// VerbPartition: the node's requests fail as on a cut network: they hang until the client timeout.
	// The process keeps running, which the fleet records differently from a stop.
	VerbPartition Verb = "partition"
	// VerbHeal ends a partition. It is the only thing that does: start does not.
	VerbHeal Verb = "heal"
	// VerbNotReady {reason, message}: the kubelet keeps renewing but reports Ready=False.
	VerbNotReady Verb = "notReady"
	// VerbReady: the kubelet reports Ready=True again.
	VerbReady Verb = "ready"
	// VerbCondition {type, status}: set a pressure condition.
	VerbCondition Verb = "condition"
	// VerbDeleteLease: an admin deletes the node's Lease; the agent recreates it on its next sync.
	VerbDeleteLease Verb = "deleteLease"
	// VerbDenyAuth: the node's credential stops working (every call gets 401 or 403), as after a
	// failed certificate rotation.
	VerbDenyAuth Verb = "denyAuth"
	// VerbRestoreAuth: the node's credential works again.
	VerbRestoreAuth Verb = "restoreAuth"
	// VerbLatency {delay}: delay each request of the node before it is sent; 0 clears it.
	VerbLatency Verb = "latency"
	// VerbMode {mode}: switch the node's heartbeat mode (lease or status).
	VerbMode Verb = "mode"
	// VerbChurn {add, remove, rate}: register new nodes, and delete nodes of the group (Node and
	// Lease) as a scale-down does.
	VerbChurn Verb = "churn"
	// VerbCrashPods {exitCode}: the containers of the pods on the group's nodes exit with exitCode
	// (default 1) and restart as their restartPolicy says, with the kubelet's CrashLoopBackOff.
	VerbCrashPods Verb = "crashPods"
	// VerbUnreadyPods: the containers of the pods on the group's nodes keep running and fail their
	// readiness: the pods turn Ready=False and leave their Services' ready endpoints.
	VerbUnreadyPods Verb = "unreadyPods"
	// VerbHealPods ends crashPods and unreadyPods on the group's nodes.
	VerbHealPods Verb = "healPods"
)

// Parameter names, as written in a profile.
const (
	paramPeriod   = "period"
	paramDuty     = "duty"
	paramJitter   = "jitter"
	paramReason   = "reason"
	paramMessage  = "message"
	paramType     = "type"
	paramStatus   = "status"
	paramDelay    = "delay"
	paramMode     = "mode"
	paramAdd      = "add"
	paramRemove   = "remove"
	paramRate     = "rate"
	paramDowntime = "downtime"
	paramExitCode = "exitCode"
)

// verbs lists every verb in the order docs/profiles.md describes them, with the parameters it takes.
// Validation refuses any other parameter, so that a misplaced one (a delay on a stop) is not silently
// ignored.
var verbs = []struct {
	verb   Verb
	params []string
}{
	{VerbStop, nil},
	{VerbStart, nil},
	{VerbRestart, []string{paramDowntime}},
	{VerbFlap, []string{paramPeriod, paramDuty, paramJitter}},
	{VerbPartition, nil},
	{VerbHeal, nil},
	{VerbNotReady, []string{paramReason, paramMessage}},
	{VerbReady, nil},
	{VerbCondition, []string{paramType, paramStatus}},
	{VerbDeleteLease, nil},
	{VerbDenyAuth, nil},
	{VerbRestoreAuth, nil},
	{VerbLatency, []string{paramDelay}},
	{VerbMode, []string{paramMode}},
	{VerbChurn, []string{paramAdd, paramRemove, paramRate}},
	{VerbCrashPods, []string{paramExitCode}},
	{VerbUnreadyPods, nil},
	{VerbHealPods, nil},
}

// Verbs returns every verb, in documentation order.
func Verbs() []Verb {
	out := make([]Verb, len(verbs))
	for i, v := range verbs {
		out[i] = v.verb
	}
	return out
}

// verbParams returns the parameters a verb takes, and whether the verb exists.
func verbParams(v Verb) ([]string, bool) {
	for _, e := range verbs {
		if e.verb == v {
			return e.params, true
		}
	}
	return nil, false
}

// setParams returns the names of the parameter fields set on an action, in a fixed order.
func (a *Action) setParams() []string {
	var set []string
	add := func(name string, isSet bool) {
		if isSet {
			set = append(set, name)
		}
	}
	add(paramPeriod, a.Period != nil)
	add(paramDuty, a.Duty != nil)
	add(paramJitter, a.Jitter != nil)
	add(paramReason, a.Reason != "")
	add(paramMessage, a.Message != "")
	add(paramType, a.Type != "")
	add(paramStatus, a.Status != "")
	add(paramDelay, a.Delay != nil)
	add(paramMode, a.Mode != "")
	add(paramAdd, a.Add != 0)
	add(paramRemove, a.Remove != 0)
	add(paramRate, a.Rate != nil)
	add(paramDowntime, a.Downtime != nil)
	add(paramExitCode, a.ExitCode != nil)
	return set
}
