package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"fakelet.dev/fakelet/agent"
)

// What a running fleet lets a profile do beyond its agents' own controls: start a stopped agent
// on the fleet's context, grow and shrink the fleet, and delete a node's Lease as an admin would.
// Every deletion follows the cleanup rule: only objects fakelet created, each conditional on the UID
// it saw.

// ErrNotRunning is returned by what needs the fleet's agents to be running.
var ErrNotRunning = errors.New("the fleet is not running")

// ErrNotOwned is why an object was left alone: it is not the fleet's node's (another fleet's Node, or
// a Lease whose owner is not our node's current UID).
var ErrNotOwned = errors.New("not the fleet's: left alone")

// StartNode starts, or restarts after Stop, the agent of node number index on the fleet's context:
// a restarted kubelet. It does nothing to an agent that runs.
func (f *Fleet) StartNode(index int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runCtx == nil || f.closed {
		return ErrNotRunning
	}
	a := f.agentLocked(index)
	if a == nil {
		return fmt.Errorf("start node %s: %w", NodeName(f.cfg.NamePrefix, index), errNoSuchNode)
	}
	a.Start(f.runCtx)
	return nil
}

var errNoSuchNode = errors.New("not in the fleet")

// RestartNode restarts the kubelet of node number index, as after an upgrade: its process dies at
// once, with whatever it had in flight, and a new one starts downtime later on the fleet's clock,
// with none of the old one's state. A node churn removed in the meantime is not started again.
func (f *Fleet) RestartNode(index int, downtime time.Duration) error {
	a := f.Agent(index)
	if a == nil {
		return fmt.Errorf("restart node %s: %w", NodeName(f.cfg.NamePrefix, index), errNoSuchNode)
	}
	a.Stop()
	if downtime <= 0 {
		return f.StartNode(index)
	}
	f.sched.After(downtime, startLater{f, index})
	return nil
}

// startLater is a restarted kubelet's new process, once its downtime is over.
type startLater struct {
	f     *Fleet
	index int
}

func (s startLater) Run() { _ = s.f.StartNode(s.index) }

// AddNodes adds agents for node numbers indexes to the running fleet and starts them at once, as new
// machines booting (a scale-up); the caller paces them. Indexes must continue the fleet's numbering in
// order: the first is FirstIndex + len(Agents()), so names stay PREFIX-NNNNN without gaps. The added
// nodes get their zone as the initial ones do, and the fleet cleans them up with the others.
func (f *Fleet) AddNodes(indexes []int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runCtx == nil || f.closed {
		return ErrNotRunning
	}
	for _, index := range indexes {
		next := f.cfg.FirstIndex + len(f.agents)
		if index != next {
			return fmt.Errorf("add node %d: the fleet's next node number is %d", index, next)
		}
		name := NodeName(f.cfg.NamePrefix, index)
		a := agent.New(f.acfg, f.heartbeat[len(f.agents)%len(f.heartbeat)], name, index, f.cfg.zone(index))
		f.agents = append(f.agents, a)
		f.byName[name] = a
		f.added++
		f.started++
		a.Start(f.runCtx)
	}
	return nil
}

// RemoveNodes deletes nodes as a scale-down does: each node's agent stops for good, then the pods the
// fleet created on it are deleted, then its Node is deleted (if it carries the fleet's label, on its UID) and its Lease (if our Node owns it, on the
// Lease's UID). It goes on after a failure and returns every error.
func (f *Fleet) RemoveNodes(ctx context.Context, indexes []int) error {
	var errs []error
	for _, index := range indexes {
		f.mu.Lock()
		a := f.agentLocked(index)
		if a != nil {
			f.removed[a] = true
		}
		f.mu.Unlock()
		name := NodeName(f.cfg.NamePrefix, index)
		if a == nil {
			errs = append(errs, fmt.Errorf("remove node %s: %w", name, errNoSuchNode))
			continue
		}
		a.Stop()
		a.Forget()
		if err := f.deleteNodePods(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("remove node %s: %w", name, err))
		}
		if err := f.deleteNode(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("remove node %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// deleteNode deletes our Node named name, and then its Lease.
func (f *Fleet) deleteNode(ctx context.Context, name string) error {
	node, err := f.ourNode(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil // gone already; a Lease it owned is the garbage collector's
	} else if err != nil {
		return err
	}
	err = f.admin.CoreV1().Nodes().Delete(ctx, name, uidPrecondition(node.UID))
	if err := ignoreGone(err, "delete node "+name); err != nil {
		return err
	}
	err = f.deleteOwnedLease(ctx, name, node.UID)
	if errors.Is(err, ErrNotOwned) || apierrors.IsNotFound(err) {
		return nil // not ours, or none: nothing to delete
	}
	return err
}

// DeleteLease deletes the Lease of node number index as an admin would, if and only if the Lease's
// owner is that Node's current UID; the delete is conditional on the Lease's UID, so a Lease recreated
// in between is not touched. The agent recreates the Lease at its next sync. A Lease the node does not
// own is left alone and the error wraps ErrNotOwned.
func (f *Fleet) DeleteLease(ctx context.Context, index int) error {
	if f.Agent(index) == nil {
		return fmt.Errorf("delete lease of node %s: %w", NodeName(f.cfg.NamePrefix, index), errNoSuchNode)
	}
	name := NodeName(f.cfg.NamePrefix, index)
	node, err := f.ourNode(ctx, name)
	if err != nil {
		return err
	}
	return f.deleteOwnedLease(ctx, name, node.UID)
}

// ourNode gets the Node named name and checks that it carries the fleet's label.
func (f *Fleet) ourNode(ctx context.Context, name string) (*corev1.Node, error) {
	node, err := f.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", name, err)
	}
	if !f.acfg.Template.Owns(node) {
		return nil, fmt.Errorf("node %s: %w", name, ErrNotOwned)
	}
	return node, nil
}

// deleteOwnedLease deletes the Lease named name if owner owns it, on the Lease's UID.
func (f *Fleet) deleteOwnedLease(ctx context.Context, name string, owner types.UID) error {
	leases := f.admin.CoordinationV1().Leases(agent.LeaseNamespace)
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get lease %s: %w", name, err)
	}
	owned := false
	for _, o := range lease.OwnerReferences {
		if o.Kind == "Node" && o.Name == name && o.UID == owner && owner != "" {
			owned = true
		}
	}
	if !owned {
		return fmt.Errorf("lease %s is not owned by node %s (uid %s): %w", name, name, owner, ErrNotOwned)
	}
	if err := leases.Delete(ctx, name, uidPrecondition(lease.UID)); err != nil {
		return fmt.Errorf("delete lease %s: %w", name, err)
	}
	return nil
}
