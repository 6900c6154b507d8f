package observe

import "time"

// Kind is what a transition records.
type Kind string

const (
	// Condition is a node condition with a new status (or seen for the first time): Type, Status and
	// Reason are the condition's.
	Condition Kind = "condition"
	// TaintAdded is a taint the node did not have: Type is its key, Status its effect.
	TaintAdded Kind = "taintAdded"
	// TaintRemoved is a taint the node no longer has: Type is its key, Status its effect.
	TaintRemoved Kind = "taintRemoved"
	// LeaseCreated is a node Lease that appeared: at the first list, or recreated after a deletion.
	// Reason holds its uid.
	LeaseCreated Kind = "leaseCreated"
	// LeaseDeleted is a node Lease that disappeared.
	LeaseDeleted Kind = "leaseDeleted"
)

// Transition is one change to one node, as it arrived at the fleet's process.
type Transition struct {
	At   time.Time `json:"at"`
	Node string    `json:"node"`
	Kind Kind      `json:"kind"`
	// Type is the condition type or the taint key.
	Type string `json:"type,omitempty"`
	// Status is the condition status or the taint effect.
	Status string `json:"status,omitempty"`
	// Reason is the condition's reason, or a Lease's uid.
	Reason string `json:"reason,omitempty"`
}
