package scenario

import (
	"time"

	"fakelet.dev/fakelet/profiles"
)

// Record is what a run of a profile did and when, on the fleet's clock: the input of measurement,
// which pairs each applied op with the control plane's reaction to it. It is plain data.
type Record struct {
	// Profile is the profile's metadata.name.
	Profile string `json:"profile"`
	// Nodes is the fleet size the phases started with; Ready how many of them were Ready then.
	Nodes int `json:"nodes"`
	Ready int `json:"ready"`
	// ReadyTimedOut says the phases began because the wait for every node to be Ready timed out.
	ReadyTimedOut bool `json:"readyTimedOut,omitempty"`
	// Start is when the first phase began: event offsets (profiles.Event.At) count from it. Zero
	// while the run waits for its nodes.
	Start time.Time `json:"start"`
	// Phases are the phases begun so far, in order.
	Phases []PhaseRecord `json:"phases"`
	// Applied lists the ops the runner applied, in the order they took effect (ops that call the
	// apiserver, deleteLease and remove, take effect when their calls return): every one up to twice
	// AppliedKept, else the first and the last AppliedKept, since a flap of hours applies millions.
	// AppliedOK and AppliedFailed count them all.
	Applied       []Applied `json:"applied"`
	AppliedOK     int       `json:"appliedOK"`
	AppliedFailed int       `json:"appliedFailed"`
	// CutShort says the run ended (its context did) before its last phase did.
	CutShort bool `json:"cutShort,omitempty"`
	// Workloads is what the run created of the profile's workloads; nil without them.
	Workloads *WorkloadRecord `json:"workloads,omitempty"`
}

// AppliedKept is how many of the first and of the last applied ops a Record lists.
const AppliedKept = 1000

// PhaseRecord is when one phase ran. End is zero while it runs; for a phase cut short it is when
// the run ended.
type PhaseRecord struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Applied is one op applied to one node: (Phase, Action, Node) names it as profiles.Event does.
type Applied struct {
	Phase  int         `json:"phase"`
	Action int         `json:"action"`
	Node   int         `json:"node"`
	Op     profiles.Op `json:"op"`
	// Group is the action's group; empty for a churn that only adds.
	Group string `json:"group,omitempty"`
	// At is when the op took effect, or failed.
	At time.Time `json:"at"`
	// Err says why the op did not take effect; empty when it did.
	Err string `json:"err,omitempty"`
}
