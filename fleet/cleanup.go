package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
)

// Cleanup deletes what this run created or adopted and nothing else: each agent's Node and Lease and
// the fleet's pods, each on the UID the run saw and only while it still carries this run's
// fleetname.RunAnnotation, deleted at the resource version read just before, so an object someone else
// created in the meantime under the same name, or another run adopted, is never deleted. What an
// agent gave up (another run holds it) is not the run's any more. It sends CleanupQPS deletions a
// second, node by node (its pods, its Lease, the Node), within CleanupDeadline; what it could not
// delete is a *LeftError.
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
					items = append(items, deletion{kind: kindPod, name: PodName(a.Name(), i), uid: uid, fleet: f.cfg.Fleet})
				}
			}
		}
		node, lease := a.Owned()
		if lease != "" {
			items = append(items, f.leaseDeletion(a.Name(), lease, node))
		}
		if node != "" {
			items = append(items, f.ownDeletion(kindNode, a.Name(), node))
		}
	}
	return items
}

// ownDeletion is the deletion of this run's object: on uid, while it carries the run's ID.
func (f *Fleet) ownDeletion(kind objectKind, name string, uid types.UID) deletion {
	return deletion{kind: kind, name: name, uid: uid, run: f.cfg.RunID, holdsRun: true, fleet: f.cfg.Fleet}
}

// leaseDeletion is the deletion of this run's Lease uid, while the agent's Node node owns it.
func (f *Fleet) leaseDeletion(name string, uid, node types.UID) deletion {
	d := f.ownDeletion(kindLease, name, uid)
	d.owner = node
	return d
}

// CleanupOptions says which fleet DeleteFleet deletes, and how.
type CleanupOptions struct {
	Fleet string
	// Mine accepts the node names to consider; nil accepts all.
	Mine func(name string) bool
	// QPS is how many deletions a second to send; 0 is DefaultCleanupQPS.
	QPS float64
	// Force deletes Nodes that a live run holds too, without watching whether one does.
	Force bool
	// DryRun deletes nothing: the result lists what would be deleted.
	DryRun bool
	// Log, if set, receives a progress line every few seconds.
	Log   io.Writer
	Clock clock.Clock // nil: the real clock
	// LeaseDuration is how long to watch the fleet's heartbeats for a live run; 0 is the kubelet's
	// default lease duration.
	LeaseDuration time.Duration
}

// DeleteFleet deletes the Nodes labelled fakelet.dev/fleet=Fleet whose names Mine accepts, the Leases
// in kube-node-lease that those Nodes own, and the pods in PodNamespace labelled with the fleet and
// bound to those Nodes: what runs of the fleet left (with --keep, or killed); and then, if it left
// nothing of the whole fleet, the fleet's released claims. Nothing else is touched: a Node without
// the label, or with another fleet's, is not even considered, whatever its name, and a Lease that
// none of those Nodes owns stays. Unless Force, it first watches the heartbeats of those Nodes whose
// run is not known to have stopped (by a claim it released) for LeaseDuration: if one changes, a live
// run holds them, and it deletes nothing and returns a *LiveRunError. Each object is then read again
// just before its delete and deleted only if it still carries the run and the heartbeat it had, at the
// version read: a run that adopted it since keeps it. Deletions go as in Fleet.Cleanup; what is left
// is a *LeftError.
func DeleteFleet(ctx context.Context, client kubernetes.Interface, o CleanupOptions) (Deleted, error) {
	if o.QPS == 0 {
		o.QPS = DefaultCleanupQPS
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = heartbeat.DefaultLeaseDurationSeconds * time.Second
	}
	var deleted Deleted
	read := func(ctx context.Context) ([]corev1.Node, map[string]*coordinationv1.Lease, error) {
		nodes, err := fleetNodes(ctx, client, o.Fleet, o.Mine)
		if err != nil {
			return nil, nil, err
		}
		names := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			names[n.Name] = true
		}
		leases, err := nodeLeases(ctx, client, names)
		return nodes, leases, err
	}
	nodes, leases, err := read(ctx)
	if err != nil {
		return deleted, err
	}
	claims, err := fleetClaims(ctx, client, o.Fleet)
	if err != nil {
		return deleted, err
	}
	observed := beats(nodes, leases)
	if !o.Force {
		stopped := map[string]bool{}
		watch := map[string]beat{}
		for _, c := range claims {
			if r := stoppedRun(c); r != "" {
				stopped[r] = true
			} else {
				watch[c.Name] = claimBeat(c)
			}
		}
		for name, b := range observed {
			if !stopped[b.run] {
				watch[name] = b
			}
		}
		err := watchBeats(ctx, o.Clock, o.LeaseDuration, o.Fleet, watch, func(ctx context.Context) (map[string]beat, error) {
			nodes, leases, err := read(ctx)
			if err != nil {
				return nil, err
			}
			now := beats(nodes, leases)
			cs, err := fleetClaims(ctx, client, o.Fleet)
			for _, c := range cs {
				now[c.Name] = claimBeat(c)
			}
			return now, err
		}, o.Log)
		if err != nil {
			return deleted, err
		}
	}
	pods, err := fleetPods(ctx, client, o.Fleet, namesOf(nodes))
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
		b := observed[n.Name]
		for _, p := range podsOf[n.Name] {
			items = append(items, deletion{kind: kindPod, name: p.Name, uid: p.UID, fleet: o.Fleet})
		}
		if l := leases[n.Name]; l != nil && ownedBy(l, n) {
			d := deletion{kind: kindLease, name: l.Name, uid: l.UID, run: agent.HeldBy(l), holdsRun: !o.Force, owner: n.UID}
			if !o.Force {
				d.beat = b.lease
			}
			items = append(items, d)
		}
		d := deletion{kind: kindNode, name: n.Name, uid: n.UID, run: agent.HeldBy(n), holdsRun: !o.Force, fleet: o.Fleet}
		if !o.Force {
			d.beat = b.status
		}
		items = append(items, d)
	}
	var claimItems []deletion
	if o.Mine == nil {
		for _, c := range claims {
			d := deletion{kind: kindLease, name: c.Name, uid: c.UID, run: agent.HeldBy(c), holdsRun: true}
			if c.Spec.RenewTime != nil {
				d.beat = c.Spec.RenewTime.Time
			}
			claimItems = append(claimItems, d)
		}
	}
	if o.DryRun {
		for _, d := range append(items, claimItems...) {
			d.addName(&deleted.Nodes, &deleted.Leases, &deleted.Pods)
		}
		sort.Strings(deleted.Pods)
		return deleted, nil
	}
	deadline := CleanupDeadline(len(items)+len(claimItems), o.QPS)
	ctx, cancel := context.WithTimeoutCause(ctx, deadline,
		fmt.Errorf("the cleanup's deadline (%v for %d objects at %v a second) passed", deadline, len(items)+len(claimItems), o.QPS))
	defer cancel()
	deleted = deleteAll(ctx, client, items, o.QPS, o.Log, o.Clock)
	if deleted.Left.Count() > 0 {
		return deleted, &LeftError{Fleet: o.Fleet, Left: deleted.Left}
	}
	// The claims go last, once nothing of the fleet is left: a claim released over Nodes still there
	// is what tells the next run that their run stopped.
	c := deleteAll(ctx, client, claimItems, o.QPS, nil, o.Clock)
	deleted.Leases = append(deleted.Leases, c.Leases...)
	deleted.Left = c.Left
	if deleted.Left.Count() > 0 {
		return deleted, &LeftError{Fleet: o.Fleet, Left: deleted.Left}
	}
	return deleted, nil
}

func namesOf(nodes []corev1.Node) map[string]bool {
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	return names
}

// claimBeat is a claim's heartbeat, as watchBeats compares it.
func claimBeat(c *coordinationv1.Lease) beat {
	b := beat{run: holder(c)}
	if c.Spec.RenewTime != nil {
		b.lease = c.Spec.RenewTime.Time
	}
	return b
}

// fleetClaims lists the claim Leases of fleet's shards.
func fleetClaims(ctx context.Context, client kubernetes.Interface, fleet string) ([]*coordinationv1.Lease, error) {
	list, err := client.CoordinationV1().Leases(agent.LeaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: fleetname.Label + "=" + fleet})
	if err != nil {
		return nil, fmt.Errorf("list fleet %s's claim Leases: %w", fleet, err)
	}
	var out []*coordinationv1.Lease
	for i := range list.Items {
		if l := &list.Items[i]; strings.HasPrefix(l.Name, "fakelet-claim."+fleet+".") {
			out = append(out, l)
		}
	}
	return out, nil
}

func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// ignoreGone treats an object already gone, replaced by another of the same name, or held by another
// run now, as done: none of them is the run's to delete.
func ignoreGone(err error, what string) error {
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || errors.Is(err, errNotOurs) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
