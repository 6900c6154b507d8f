package reaction

import "time"

// Action is one op a profile applied to one node.
type Action struct {
	// Phase and Group name the phase and the group of the action the op comes from.
	Phase string `json:"phase"`
	Group string `json:"group"`
	// Op is the profiles.Op applied: stop, start, notReady, ...
	Op   string `json:"op"`
	Node string `json:"node"`
	// At is when the op took effect on the node.
	At time.Time `json:"at"`
	// LastRenewal and LastStatusPatch are the node's last successful lease renewal and status patch
	// before At, from its agent; zero if none.
	LastRenewal     time.Time `json:"lastRenewal,omitzero"`
	LastStatusPatch time.Time `json:"lastStatusPatch,omitzero"`
	// Condition and Status are a condition op's parameters (MemoryPressure, True).
	Condition string `json:"condition,omitempty"`
	Status    string `json:"status,omitempty"`
}

// LastHeartbeat is the later of the last lease renewal and the last status patch: what the node
// lifecycle controller's grace period counts from, in lease mode and in status mode alike.
func (a Action) LastHeartbeat() time.Time {
	if a.LastStatusPatch.After(a.LastRenewal) {
		return a.LastStatusPatch
	}
	return a.LastRenewal
}

// Phase is when one phase of the run ran: [Start, End).
type Phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Ops whose reactions are measured from the last heartbeat too: after them the node falls silent, so
// the node lifecycle controller's grace period runs from its last heartbeat.
var silencing = map[string]bool{"stop": true, "partition": true, "denyAuth": true}

// Silencing says whether op silences a node, so that its reactions are also measured from the node's
// last heartbeat.
func Silencing(op string) bool { return silencing[op] }

// Reference points of a latency, named as fakelet's metrics name them.
const (
	FromAction      = "action"
	FromLastRenewal = "last_renewal"
)
