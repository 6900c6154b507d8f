package fleet

import (
	"context"
	"fmt"
	"io"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
)

// Cleanup deletes what this run created or adopted and nothing else: each agent's Node and Lease and
// the fleet's pods, each on the UID the run saw, so an object someone else created in the meantime
// under the same name is never deleted. It sends CleanupQPS deletions a second, node by node (its
// pods, its Lease, the Node), within CleanupDeadline; what it could not delete is a *LeftError.
func (f *Fleet) Cleanup(ctx context.Context) error {
	items := f.owned()
	ctx, cancel := context.WithTimeoutCause(ctx, CleanupDeadline(len(items), f.cfg.CleanupQPS),
		fmt.Errorf("the cleanup's deadline (%v for %d objects at %v a second) passed", CleanupDeadline(len(items), f.cfg.CleanupQPS), len(items), f.cfg.CleanupQPS))
	defer cancel()
	d := deleteAll(ctx, f.admin, items, f.cfg.CleanupQPS, f.cfg.CleanupLog, f.cfg.Clock)
	if d.Left.Count() > 0 {
		return &LeftError{Fleet: f.cfg.Fleet, Left: d.Left}
	}
	if f.pods != nil {
		return DeletePodNamespace(ctx, f.admin, f.cfg.Fleet)
	}
	return nil
}

// owned lists what the run created or adopted and still has, node by node.
func (f *Fleet) owned() []deletion {
	f.mu.Lock()
	var agents []*agent.Agent
	for _, a := range f.agents {
		if !f.removed[a] { // RemoveNodes deleted those already
			agents = append(agents, a)
		}
	}
	f.mu.Unlock()
	var items []deletion
	for _, a := range agents {
		if f.pods != nil {
			for i := range f.cfg.PodsPerNode {
				if uid, ok := f.pods.createdUID(PodName(a.Name(), i)); ok {
					items = append(items, deletion{kindPod, PodName(a.Name(), i), uid})
				}
			}
		}
		node, lease := a.Owned()
		if lease != "" {
			items = append(items, deletion{kindLease, a.Name(), lease})
		}
		if node != "" {
			items = append(items, deletion{kindNode, a.Name(), node})
		}
	}
	return items
}

// CleanupOptions says which fleet DeleteFleet deletes, and how.
type CleanupOptions struct {
	Fleet string
	// Mine accepts the node names to consider; nil accepts all.
	Mine func(name string) bool
	// QPS is how many deletions a second to send; 0 is DefaultCleanupQPS.
	QPS float64
	// Force deletes Nodes that a live run holds too (their Leases renewed within their duration).
	Force bool
	// DryRun deletes nothing: the result lists what would be deleted.
	DryRun bool
	// Log, if set, receives a progress line every few seconds.
	Log   io.Writer
	Clock clock.Clock // nil: the real clock
}

// DeleteFleet deletes the Nodes labelled fakelet.dev/fleet=Fleet whose names Mine accepts, the Leases
// in kube-node-lease that those Nodes own, and the pods in PodNamespace labelled with the fleet and
// bound to those Nodes: what runs of the fleet left (with --keep, or killed). Nothing else is touched:
// a Node without the label, or with another fleet's, is not even considered, whatever its name, and a
// Lease that none of those Nodes owns stays. If a live run holds any of the Nodes, it deletes nothing
// and returns a *LiveRunError, unless Force. Deletions go as in Fleet.Cleanup; what is left is a
// *LeftError.
func DeleteFleet(ctx context.Context, client kubernetes.Interface, o CleanupOptions) (Deleted, error) {
	if o.QPS == 0 {
		o.QPS = DefaultCleanupQPS
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	var deleted Deleted
	var nodes []corev1.Node
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{agent.FleetLabel: o.Fleet}).String(), Limit: 500}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return deleted, fmt.Errorf("list fleet %s's nodes: %w", o.Fleet, err)
		}
		for _, n := range list.Items {
			if o.Mine == nil || o.Mine(n.Name) {
				nodes = append(nodes, n)
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	leases, err := nodeLeases(ctx, client, names)
	if err != nil {
		return deleted, err
	}
	if live := liveHolders(o.Fleet, "", nodes, leases, o.Clock.Now()); live != nil && !o.Force {
		return deleted, live
	}
	pods, err := fleetPods(ctx, client, o.Fleet, names)
	if err != nil {
		return deleted, err
	}
	podsOf := map[string][]corev1.Pod{}
	for _, p := range pods {
		podsOf[p.Spec.NodeName] = append(podsOf[p.Spec.NodeName], p)
	}
	var items []deletion
	for i := range nodes {
		n := &nodes[i]
		for _, p := range podsOf[n.Name] {
			items = append(items, deletion{kindPod, p.Name, p.UID})
		}
		if l := leases[n.Name]; l != nil && ownedBy(l, n) {
			items = append(items, deletion{kindLease, l.Name, l.UID})
		}
		items = append(items, deletion{kindNode, n.Name, n.UID})
	}
	if o.DryRun {
		for _, d := range items {
			d.addName(&deleted.Nodes, &deleted.Leases, &deleted.Pods)
		}
		sort.Strings(deleted.Pods)
		return deleted, nil
	}
	deadline := CleanupDeadline(len(items), o.QPS)
	ctx, cancel := context.WithTimeoutCause(ctx, deadline,
		fmt.Errorf("the cleanup's deadline (%v for %d objects at %v a second) passed", deadline, len(items), o.QPS))
	defer cancel()
	deleted = deleteAll(ctx, client, items, o.QPS, o.Log, o.Clock)
	if deleted.Left.Count() > 0 {
		return deleted, &LeftError{Fleet: o.Fleet, Left: deleted.Left}
	}
	return deleted, nil
}

func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// ignoreGone treats an object already gone, or replaced by another of the same name, as done.
func ignoreGone(err error, what string) error {
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
