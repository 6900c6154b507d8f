package fleet

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// Whether another run is alive is judged by what the server shows it doing, never by comparing that
// run's timestamps with this process's clock: a Lease's renew time is written by its holder's clock,
// and a run whose clock is ahead by more than the lease duration would see every live run's Leases
// as expired. A run is alive if one of its heartbeats (a Lease's renew time, a Node's Ready
// heartbeat) changes while fakelet watches it for one lease duration measured on its own clock;
// unchanged over that time, it has stopped. The node lifecycle controller's writes (Unknown
// conditions, taints) leave the heartbeat times as they were, so a stopped run's Nodes going Unknown
// do not look alive.

// LiveRunError is why a run or a cleanup leaves a fleet's Nodes alone: another run still renews
// their Leases. Runs maps each such run's ID to the Nodes it holds.
type LiveRunError struct {
	Fleet string
	Runs  map[string][]string
	// Watched is how long fakelet watched the heartbeats before it saw these change.
	Watched time.Duration
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
	return fmt.Sprintf("%d of fleet %s's nodes are held by a live run (it renewed their Leases or heartbeat their status within %v of fakelet watching them): %s",
		n, e.Fleet, e.Watched.Round(time.Second), strings.Join(runs, "; "))
}

// noRunID names the holder of a Lease without fleetname.RunAnnotation: a fakelet from before run IDs,
// or a kubelet that is not fakelet at all.
const noRunID = "(no run ID)"

// beat is the last sign of life of a Node's kubelet as the server shows it: the run that gave it,
// its Lease's renew time (if the Node owns the Lease) and its Ready condition's heartbeat, each by
// that run's clock and each zero for none.
type beat struct {
	run           string
	lease, status time.Time
}

// last is the later of the two heartbeats.
func (b beat) last() time.Time {
	if b.lease.After(b.status) {
		return b.lease
	}
	return b.status
}

// beats returns the heartbeat of each of nodes that has one, with leases the Leases by name.
func beats(nodes []corev1.Node, leases map[string]*coordinationv1.Lease) map[string]beat {
	out := make(map[string]beat, len(nodes))
	for i := range nodes {
		if b := beatOf(&nodes[i], leases[nodes[i].Name]); !b.last().IsZero() {
			out[nodes[i].Name] = b
		}
	}
	return out
}

func beatOf(node *corev1.Node, lease *coordinationv1.Lease) beat {
	b := beat{run: agent.HeldBy(node)}
	if lease != nil && ownedBy(lease, node) && lease.Spec.RenewTime != nil {
		b.lease = lease.Spec.RenewTime.Time
		if r := agent.HeldBy(lease); r != "" {
			b.run = r
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			b.status = c.LastHeartbeatTime.Time
		}
	}
	return b
}

// watchBeats reads the heartbeats of the Nodes in watch (by name: what the first read showed) again
// every quarter of d on clk, for d: it returns a *LiveRunError naming those that changed as soon as
// one does, or nil once d has passed with none changed: their runs have stopped. It waits not at all
// for an empty watch. log, if set, says why fakelet waits.
func watchBeats(ctx context.Context, clk clock.Clock, d time.Duration, fleet string, watch map[string]beat,
	read func(ctx context.Context) (map[string]beat, error), log io.Writer) error {
	if len(watch) == 0 {
		return nil
	}
	if log != nil {
		runs := map[string]bool{}
		for _, b := range watch {
			runs[runName(b.run)] = true
		}
		fmt.Fprintf(log, "fleet %s: %d nodes hold heartbeats of %s, not known to have stopped: watching them for %v to tell whether they still run\n",
			fleet, len(watch), examples(sortedKeys(runs), 3), d)
	}
	begin := clk.Now()
	for step := 1; step <= 4; step++ {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-clk.After(d / 4):
		}
		now, err := read(ctx)
		if err != nil {
			return err
		}
		var live *LiveRunError
		for name, was := range watch {
			if b, ok := now[name]; ok && b != was {
				if live == nil {
					live = &LiveRunError{Fleet: fleet, Runs: map[string][]string{}, Watched: clk.Since(begin)}
				}
				live.Runs[runName(b.run)] = append(live.Runs[runName(b.run)], name)
			}
		}
		if live != nil {
			return live
		}
	}
	return nil
}

func runName(run string) string {
	if run == "" {
		return noRunID
	}
	return run
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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

// fleetNodes lists the Nodes labelled as fleet's that mine accepts (nil: all), by name.
func fleetNodes(ctx context.Context, client kubernetes.Interface, fleet string, mine func(string) bool) ([]corev1.Node, error) {
	var nodes []corev1.Node
	opts := metav1.ListOptions{LabelSelector: fleetname.Label + "=" + fleet, Limit: 500}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list fleet %s's nodes: %w", fleet, err)
		}
		for _, n := range list.Items {
			if mine == nil || mine(n.Name) {
				nodes = append(nodes, n)
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}
