package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// What a running fleet lets a profile do beyond its agents' own controls: stop an agent, start a
// stopped one on the fleet's context, restart one, grow and shrink the fleet, and delete a node's Lease as an admin would.
// Every deletion follows the cleanup rule: only objects the run created or adopted and still holds,
// each conditional on the UID the agent has and the version read just before.

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
		return fmt.Errorf("start node %s: %w", fleetname.NodeName(f.cfg.NamePrefix, index), errNoSuchNode)
	}
	a.Start(f.runCtx)
	return nil
}

var errNoSuchNode = errors.New("not in the fleet")

// StopNode stops the kubelet of node number index, as a machine that goes down: its process dies at
// once, with whatever it had in flight, and its Node and Lease stay for the control plane to find
// stale. StartNode starts it again.
func (f *Fleet) StopNode(index int) error {
	a := f.Agent(index)
	if a == nil {
		return fmt.Errorf("stop node %s: %w", fleetname.NodeName(f.cfg.NamePrefix, index), errNoSuchNode)
	}
	a.Stop()
	return nil
}

// RestartNode restarts the kubelet of node number index, as after an upgrade: its process dies at
// once, with whatever it had in flight, and a new one starts downtime later on the fleet's clock,
// with none of the old one's state. A node churn removed in the meantime is not started again.
func (f *Fleet) RestartNode(index int, downtime time.Duration) error {
	a := f.Agent(index)
	if a == nil {
		return fmt.Errorf("restart node %s: %w", fleetname.NodeName(f.cfg.NamePrefix, index), errNoSuchNode)
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
		name := fleetname.NodeName(f.cfg.NamePrefix, index)
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
// fleet created on it are deleted, then its Lease and its Node, each only if it is still the one the
// agent created or adopted (its UID) and this run holds it (fleet.deletion.send): a Node replaced
// mid-run, or held by another run since, is left alone. It goes on after a failure and returns every
// error.
func (f *Fleet) RemoveNodes(ctx context.Context, indexes []int) error {
	var errs []error
	for _, index := range indexes {
		f.mu.Lock()
		a := f.agentLocked(index)
		if a != nil {
			f.removed[a] = true
		}
		f.mu.Unlock()
		name := fleetname.NodeName(f.cfg.NamePrefix, index)
		if a == nil {
			errs = append(errs, fmt.Errorf("remove node %s: %w", name, errNoSuchNode))
			continue
		}
		a.Stop()
		a.Forget()
		if err := f.deleteNodePods(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("remove node %s: %w", name, err))
		}
		if err := f.deleteNode(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("remove node %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// deleteNode deletes the Lease and then the Node that a's agent, stopped, created or adopted, if they
// are still those and this run's; the garbage collector deletes a Lease its deleted Node owned. A
// Node of that name that is not the agent's (another fleet's, or another run's since) is left alone
// and the error wraps ErrNotOwned.
func (f *Fleet) deleteNode(ctx context.Context, a *agent.Agent) error {
	node, lease := a.Owned()
	if lease != "" {
		err := f.leaseDeletion(a.Name(), lease, node).send(ctx, f.admin)
		if err := ignoreGone(err, "delete lease "+a.Name()); err != nil && !errors.Is(err, errNotOurs) {
			return err
		}
	}
	if node == "" {
		// The agent has none: if a Node has the name, it is someone else's.
		_, err := f.admin.CoreV1().Nodes().Get(ctx, a.Name(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("get node %s: %w", a.Name(), err)
		}
		return fmt.Errorf("node %s: its agent created or adopted none: %w", a.Name(), ErrNotOwned)
	}
	err := f.ownDeletion(kindNode, a.Name(), node).send(ctx, f.admin)
	if errors.Is(err, errNotOurs) {
		return fmt.Errorf("node %s is not the one its agent holds (uid %s) in run %s: %w", a.Name(), node, f.cfg.RunID, ErrNotOwned)
	}
	return ignoreGone(err, "delete node "+a.Name())
}

// DeleteLease deletes the Lease of node number index as an admin would, if and only if it is the Lease
// the node's agent created or adopted, its Node still owns it and this run still holds it; the delete is conditional on that
// UID and on the version just read, so a Lease recreated or adopted in between is not touched. The
// agent recreates the Lease at its next sync. A Lease that is not the agent's is left alone and the
// error wraps ErrNotOwned.
func (f *Fleet) DeleteLease(ctx context.Context, index int) error {
	a := f.Agent(index)
	name := fleetname.NodeName(f.cfg.NamePrefix, index)
	if a == nil {
		return fmt.Errorf("delete lease of node %s: %w", name, errNoSuchNode)
	}
	node, uid := a.Owned()
	if uid == "" {
		return fmt.Errorf("lease %s: node %s's agent has created or adopted none: %w", name, name, ErrNotOwned)
	}
	err := f.leaseDeletion(name, uid, node).send(ctx, f.admin)
	if errors.Is(err, errNotOurs) || apierrors.IsConflict(err) {
		return fmt.Errorf("lease %s is not the one node %s's agent holds (uid %s) in run %s: %w", name, name, uid, f.cfg.RunID, ErrNotOwned)
	}
	if err != nil {
		return fmt.Errorf("delete lease %s: %w", name, err)
	}
	return nil
}
