package agent

import (
	"fmt"
	"time"

	"fakelet.dev/fakelet/heartbeat"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// HeldError is why an agent leaves its Node and Lease alone: another run of its fleet that is still
// alive holds them. The fleet checks this for all its Nodes before it starts; the agent checks again
// for what it finds when it registers and renews, which covers Nodes added later and a run that
// started in between.
type HeldError struct {
	Node, Run string
	At        time.Time // the other run's last heartbeat
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("node %s is held by live run %s (its last heartbeat %s, within the lease duration): refusing to take it over",
		e.Node, e.Run, e.At.UTC().Format(time.RFC3339))
}

// noRunID names the holder of an object without a RunAnnotation.
const noRunID = "(no run ID)"

// heldElsewhere returns a *HeldError if another run than the agent's renewed lease within its
// duration. Without a run ID of its own (tests of the agent alone) nothing is held elsewhere.
func (a *Agent) heldElsewhere(lease *coordinationv1.Lease) error {
	own := a.cfg.Template.RunID
	run := HeldBy(lease)
	if own == "" || run == own || lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return nil
	}
	renewed := lease.Spec.RenewTime.Time
	if !a.cfg.Scheduler.Clock().Now().Before(renewed.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)) {
		return nil
	}
	if run == "" {
		run = noRunID
	}
	return &HeldError{Node: a.name, Run: run, At: renewed}
}

// nodeHeldElsewhere returns a *HeldError if another run than the agent's holds node by its status:
// its Ready heartbeat is within the kubelet's default lease duration (a kubelet that has registered
// and not yet created its Lease, or one in --mode status).
func (a *Agent) nodeHeldElsewhere(node *corev1.Node) error {
	own := a.cfg.Template.RunID
	run := HeldBy(node)
	if own == "" || run == own {
		return nil
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && a.cfg.Scheduler.Clock().Since(c.LastHeartbeatTime.Time) < heartbeat.DefaultLeaseDurationSeconds*time.Second {
			if run == "" {
				run = noRunID
			}
			return &HeldError{Node: a.name, Run: run, At: c.LastHeartbeatTime.Time}
		}
	}
	return nil
}
