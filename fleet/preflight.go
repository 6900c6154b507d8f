package fleet

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
)

// Preflight fails, before anything is written, if the cluster cannot be reached, if the fleet's
// credential may not do all that the run will do (fleets from New), or if the cluster already has
// Nodes with the fleet's names that are not the fleet's own. Each error says what to do about it.
// Run calls it unless it has passed already: a caller that has more to start before the fleet (watches
// of its own) can check first and fail fast.
func (f *Fleet) Preflight(ctx context.Context) error {
	if f.checkPermissions {
		if err := CheckPermissions(ctx, f.admin, Permissions(f.cfg)); err != nil {
			return err
		}
	}
	var foreign []string
	var adoptable []corev1.Node // the fleet's own, left by earlier runs or held by a live one
	opts := metav1.ListOptions{Limit: 500}
	for {
		lctx, cancel := context.WithTimeout(ctx, checkTimeout)
		list, err := f.admin.CoreV1().Nodes().List(lctx, opts)
		cancel()
		if err != nil {
			return explainUnreachable(fmt.Errorf("list nodes to check that the fleet's names are free: %w", err))
		}
		for i := range list.Items {
			n := &list.Items[i]
			if !f.holds(n.Name) {
				continue
			}
			if n.Labels[agent.FleetLabel] == f.cfg.Fleet {
				adoptable = append(adoptable, *n)
				continue
			}
			owner := "no fleet label"
			if v, ok := n.Labels[agent.FleetLabel]; ok {
				owner = agent.FleetLabel + "=" + v
			}
			foreign = append(foreign, n.Name+" ("+owner+")")
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if len(foreign) == 0 {
		if err := f.checkNotHeld(ctx, adoptable); err != nil {
			return err
		}
		f.checked.Store(true)
		return nil
	}
	sort.Strings(foreign)
	shown := foreign
	if len(shown) > 10 {
		shown = append(shown[:10:10], "and "+strconv.Itoa(len(foreign)-10)+" more")
	}
	return fmt.Errorf("%d node(s) with the fleet's names already exist and are not fleet %q's: %s; "+
		"choose another --name-prefix, or remove them yourself: fakelet never touches what it did not create",
		len(foreign), f.cfg.Fleet, strings.Join(shown, ", "))
}

// checkNotHeld fails if another run that is still alive holds one of nodes, the fleet's own Nodes
// with this run's names: taking them over would have two runs heartbeat for one Node, and the first
// to end would delete what the other still runs. What a finished or crashed run left is adopted once
// its Leases have expired.
func (f *Fleet) checkNotHeld(ctx context.Context, nodes []corev1.Node) error {
	if len(nodes) == 0 {
		return nil
	}
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	lctx, cancel := context.WithTimeout(ctx, checkTimeout)
	leases, err := nodeLeases(lctx, f.admin, names)
	cancel()
	if err != nil {
		return explainUnreachable(fmt.Errorf("list node leases to check that no live run holds the fleet's nodes: %w", err))
	}
	live := liveHolders(f.cfg.Fleet, f.cfg.RunID, nodes, leases, f.cfg.Clock.Now())
	if live == nil {
		return nil
	}
	return fmt.Errorf("%w; refusing to start: stop that run, or if it has stopped wait %v for its Leases to expire; "+
		"or choose another --fleet or --name-prefix (shards of one fleet: give each its own --shard i/n of one n)", live, live.ExpiresIn())
}
