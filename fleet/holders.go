package fleet

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/heartbeat"
)

// LiveRunError is why a run or a cleanup leaves a fleet's Nodes alone: another run still renews
// their Leases. Runs maps each such run's ID to the Nodes it holds.
type LiveRunError struct {
	Fleet string
	Runs  map[string][]string
	// Newest is the latest renewal of one of those Leases, and Expires when the last of them expires
	// if no one renews it again.
	Newest, Expires time.Time
	Now             time.Time
}

func (e *LiveRunError) Error() string {
	ids := make([]string, 0, len(e.Runs))
	n := 0
	for id, nodes := range e.Runs {
		ids = append(ids, id)
		n += len(nodes)
	}
	sort.Strings(ids)
	var runs []string
	for _, id := range ids {
		nodes := e.Runs[id]
		sort.Strings(nodes)
		runs = append(runs, fmt.Sprintf("run %s holds %s", id, examples(nodes, 3)))
	}
	return fmt.Sprintf("%d of fleet %s's nodes are held by a live run (it renewed their Leases or heartbeat their status within the lease duration, the last %v ago): %s",
		n, e.Fleet, e.Now.Sub(e.Newest).Round(time.Second), strings.Join(runs, "; "))
}

// ExpiresIn is how long until the last of those Leases expires, if their run has stopped.
func (e *LiveRunError) ExpiresIn() time.Duration {
	return max(0, e.Expires.Sub(e.Now)).Round(time.Second)
}

// noRunID names the holder of a Lease without agent.RunAnnotation: a fakelet from before run IDs,
// or a kubelet that is not fakelet at all.
const noRunID = "(no run ID)"

// liveHolders returns the error that names the runs other than self that hold one of nodes, or nil
// if there are none. A run holds a Node while it renews the Node's Lease: renewed within its duration
// before now. A Node whose Lease is not there yet (its kubelet creates it after registering, up to a
// renew interval later) or that has none (--mode status) is held while its Ready condition's
// heartbeat is within statusHeartbeatWindow. leases are the Leases in kube-node-lease by name; a
// Lease counts only if the Node of its name owns it.
func liveHolders(fleet, self string, nodes []corev1.Node, leases map[string]*coordinationv1.Lease, now time.Time) *LiveRunError {
	var e *LiveRunError
	for i := range nodes {
		n := &nodes[i]
		renewed, expires, run := lastHeartbeat(n, leases[n.Name])
		if renewed.IsZero() || !now.Before(expires) {
			continue
		}
		if run == self && self != "" {
			continue
		}
		if run == "" {
			run = noRunID
		}
		if e == nil {
			e = &LiveRunError{Fleet: fleet, Runs: map[string][]string{}, Now: now}
		}
		e.Runs[run] = append(e.Runs[run], n.Name)
		if renewed.After(e.Newest) {
			e.Newest = renewed
		}
		if expires.After(e.Expires) {
			e.Expires = expires
		}
	}
	return e
}

// statusHeartbeatWindow is how long a Node's status heartbeat shows a live run when its Lease does
// not: the kubelet's default lease duration.
const statusHeartbeatWindow = heartbeat.DefaultLeaseDurationSeconds * time.Second

// lastHeartbeat is the latest sign of life of node's kubelet (zero for none), until when it counts, and
// the run that gave it: its Lease's renewal, or else its Ready condition's heartbeat.
func lastHeartbeat(node *corev1.Node, lease *coordinationv1.Lease) (at, expires time.Time, run string) {
	run = agent.HeldBy(node)
	if lease != nil && ownedBy(lease, node) && lease.Spec.RenewTime != nil && lease.Spec.LeaseDurationSeconds != nil {
		at = lease.Spec.RenewTime.Time
		expires = at.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
		if r := agent.HeldBy(lease); r != "" {
			run = r
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.LastHeartbeatTime.After(at) {
			at = c.LastHeartbeatTime.Time
			if window := at.Add(statusHeartbeatWindow); window.After(expires) {
				expires = window
			}
		}
	}
	return at, expires, run
}

// ownedBy reports whether node owns lease.
func ownedBy(lease *coordinationv1.Lease, node *corev1.Node) bool {
	for _, o := range lease.OwnerReferences {
		if o.Kind == "Node" && o.Name == node.Name && o.UID == node.UID {
			return true
		}
	}
	return false
}

// nodeLeases lists the Leases in kube-node-lease, by name, that one of names accepts.
func nodeLeases(ctx context.Context, client kubernetes.Interface, names map[string]bool) (map[string]*coordinationv1.Lease, error) {
	out := map[string]*coordinationv1.Lease{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.CoordinationV1().Leases(agent.LeaseNamespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list node leases: %w", err)
		}
		for i := range list.Items {
			if l := &list.Items[i]; names[l.Name] {
				out[l.Name] = l
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}
