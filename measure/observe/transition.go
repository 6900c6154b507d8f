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
	// PodReady is one of the node's pods whose Ready condition turned True (or was True when first
	// seen); PodNotReady one whose Ready condition turned from True to anything else. Type is the
	// pod's name.
	PodReady    Kind = "podReady"
	PodNotReady Kind = "podNotReady"
	// PodDeleted is one of the node's pods being deleted: its deletion requested (a graceful delete
	// sets its deletionTimestamp) or, if that was not seen, the pod gone. Type is the pod's name;
	// Reason is the reason of its DisruptionTarget condition, if it has one: DeletionByTaintManager
	// for the taint eviction controller's evictions.
	PodDeleted Kind = "podDeleted"
)

// Transition is one change to one node (or to one of its pods), as it arrived at the fleet's process.
type Transition struct {
	At   time.Time `json:"at"`
	Node string    `json:"node"`
	Kind Kind      `json:"kind"`
	// Type is the condition type, the taint key or the pod's name.
	Type string `json:"type,omitempty"`
	// Status is the condition status or the taint effect.
	Status string `json:"status,omitempty"`
	// Reason is the condition's reason, a Lease's uid, or a deleted pod's disruption reason.
	Reason string `json:"reason,omitempty"`
}
