package agent

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// HeldError is why an agent leaves its Node and Lease alone: another run of its fleet holds them, and
// nothing says that run has stopped. The fleet checks this for all its Nodes before it starts; the
// agent checks again for what it finds when it registers and renews, which covers Nodes added later
// and a run that started in between.
type HeldError struct {
	Node, Run string
	At        time.Time // the other run's last heartbeat, by its own clock
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("node %s is held by run %s (its last heartbeat %s, by that run's clock), which is not known to have stopped: refusing to take it over",
		e.Node, e.Run, e.At.UTC().Format(time.RFC3339))
}

// Adoptable says whether an agent may take over its fleet's object named name that run, another
// run than its own ("" for an object without a RunAnnotation), holds, given that run's last
// heartbeat on it (the Lease's renew time, or the Node's Ready heartbeat; zero for none): only if
// the fleet knows that run to have stopped. A fleet knows it either from that run's claim, released
// at its end, or by having watched the object's heartbeat stay at renewed for a whole lease
// duration of its own clock. No clock of another process is compared with the agent's: a run whose
// clock is ahead would otherwise see a live run's Lease as expired.
type Adoptable func(name, run string, renewed time.Time) bool

// noRunID names the holder of an object without a RunAnnotation.
const noRunID = "(no run ID)"

// heldElsewhere returns a *HeldError if lease is another run's and the fleet does not know that run
// to have stopped. Without a run ID of its own (tests of the agent alone) nothing is held elsewhere.
func (a *Agent) heldElsewhere(lease *coordinationv1.Lease) error {
	var renewed time.Time
	if lease.Spec.RenewTime != nil {
		renewed = lease.Spec.RenewTime.Time
	}
	return a.held(HeldBy(lease), renewed)
}

// nodeHeldElsewhere returns a *HeldError if node is another run's and the fleet does not know that
// run to have stopped, judged by its Ready heartbeat (a kubelet that has registered and not yet
// created its Lease, or one in --mode status).
func (a *Agent) nodeHeldElsewhere(node *corev1.Node) error {
	var renewed time.Time
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			renewed = c.LastHeartbeatTime.Time
		}
	}
	return a.held(HeldBy(node), renewed)
}

func (a *Agent) held(run string, renewed time.Time) error {
	own := a.cfg.Template.RunID
	if own == "" || run == own || renewed.IsZero() { // no heartbeat at all: no kubelet keeps it
		return nil
	}
	if a.cfg.Adoptable != nil && a.cfg.Adoptable(a.name, run, renewed) {
		return nil
	}
	if run == "" {
		run = noRunID
	}
	return &HeldError{Node: a.name, Run: run, At: renewed}
}
