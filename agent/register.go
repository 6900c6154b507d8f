package agent

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/fleetname"
)

// ForeignNodeError is why an agent refuses to run: a Node with its name exists and is not its fleet's.
type ForeignNodeError struct {
	Node, Fleet string
	Labels      map[string]string
}

func (e *ForeignNodeError) Error() string {
	owner := "no fleet label"
	if f, ok := e.Labels[fleetname.Label]; ok {
		owner = fmt.Sprintf("%s=%s", fleetname.Label, f)
	}
	return fmt.Sprintf("node %s already exists and is not fleet %q's (%s): refusing to touch it", e.Node, e.Fleet, owner)
}

// register is the kubelet's registerWithAPIServer: sleep, try, double the sleep up to 7 s, until the
// Node exists and is ours. It returns false if the run ended first.
func (s *statusLoop) register() bool {
	r := s.r
	step := 100 * time.Millisecond
	for {
		if r.a.cfg.Scheduler.Sleep(r.ctx, step) != nil {
			return false
		}
		step = min(2*step, MaxBackoff)
		if s.tryRegister() {
			s.registered = true
			return true
		}
		if r.ctx.Err() != nil {
			return false
		}
	}
}

// tryRegister is the kubelet's tryRegisterWithAPIServer: create the Node; if it exists, adopt it when
// it is ours, reconciling the kubelet's default labels and annotation with one status patch if needed.
func (s *statusLoop) tryRegister() bool {
	a := s.r.a
	now := metav1.NewTime(a.cfg.Scheduler.Clock().Now())
	a.mu.Lock()
	health := a.health
	a.mu.Unlock()
	node := a.cfg.Template.initialNode(a, now, health.conditions(nil, now))
	s.r.initialNodeEvents(node)
	created, err := s.c.createNode(node)
	if created != nil && created.UID != "" {
		// The server created the Node, even if the run ended while its answer was on its way (the
		// call then fails with the run's context): it is the fleet's to delete at the end.
		a.ownNode(created.UID)
	}
	if err == nil {
		a.remember(a.cfg.Template.Compact(created))
		s.listerMiss = a.kubelet()
		return true
	}
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return false
	}
	existing, err := s.c.getNode(mainClient)
	if err != nil {
		return false
	}
	if !a.cfg.Template.Owns(existing) {
		a.fail(&ForeignNodeError{Node: a.name, Fleet: a.cfg.Template.Fleet, Labels: existing.Labels})
		return false
	}
	if err := s.checkNotHeld(existing); err != nil {
		return false
	}
	original := existing.DeepCopy()
	if reconcileRegistered(node, existing) {
		patched, err := s.c.patchNodeStatus(mainClient, original, existing, existing.UID)
		if err != nil {
			return false
		}
		existing = patched
	}
	a.ownNode(existing.UID)
	a.remember(a.cfg.Template.Compact(existing))
	return true
}

// reconciledLabels are the labels the kubelet puts back on a Node it finds registered
// (updateDefaultLabels), plus the fleet label, which fakelet relies on.
var reconciledLabels = []string{
	corev1.LabelHostname, corev1.LabelOSStable, corev1.LabelArchStable,
	"beta.kubernetes.io/os", "beta.kubernetes.io/arch", corev1.LabelTopologyZone, fleetname.Label,
}

// reconcileRegistered sets existing's default labels and attach-detach annotation to initial's and
// reports whether anything changed.
func reconcileRegistered(initial, existing *corev1.Node) bool {
	changed := false
	for _, k := range reconciledLabels {
		want, ok := initial.Labels[k]
		if !ok || existing.Labels[k] == want {
			continue
		}
		if existing.Labels == nil {
			existing.Labels = map[string]string{}
		}
		existing.Labels[k] = want
		changed = true
	}
	for k, want := range initial.Annotations {
		if existing.Annotations[k] == want {
			continue
		}
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		existing.Annotations[k] = want
		changed = true
	}
	return changed
}

// checkNotHeld makes sure that no other live run holds existing, a Node of the fleet the agent is
// about to adopt: by its status heartbeat, or by the Lease it owns. It fails the agent with a
// *HeldError if one does; another error is a failed request, to try again.
func (s *statusLoop) checkNotHeld(existing *corev1.Node) error {
	a := s.r.a
	if a.cfg.Template.RunID == "" || HeldBy(existing) == a.cfg.Template.RunID {
		return nil
	}
	if err := a.nodeHeldElsewhere(existing); err != nil {
		a.fail(err)
		return err
	}
	lease, err := s.c.getLease()
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	for _, o := range lease.OwnerReferences {
		if o.Kind == "Node" && o.UID == existing.UID {
			if err := a.heldElsewhere(lease); err != nil {
				a.fail(err)
				return err
			}
		}
	}
	return nil
}
