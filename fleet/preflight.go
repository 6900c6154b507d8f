package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/fleetname"
)

// Preflight fails, before anything is written, if the cluster cannot be reached, if the fleet's
// credential may not do all that the run will do (fleets from New), or if the cluster already has
// Nodes with the fleet's names that are not the fleet's own. Each error says what to do about it.
// Run calls it unless it has passed already: a caller that has more to start before the fleet (watches
// of its own) can check first and fail fast.
func (f *Fleet) Preflight(ctx context.Context) error {
	if f.checkPermissions {
		if err := access.Check(ctx, f.admin, permissions(f.cfg)); err != nil {
			return err
		}
	}
	var foreign []string
	var adoptable []corev1.Node // the fleet's own, left by earlier runs or held by a live one
	opts := metav1.ListOptions{Limit: 500}
	for {
		lctx, cancel := context.WithTimeout(ctx, access.CheckTimeout)
		list, err := f.admin.CoreV1().Nodes().List(lctx, opts)
		cancel()
		if err != nil {
			return access.ExplainUnreachable(fmt.Errorf("list nodes to check that the fleet's names are free: %w", err))
		}
		for i := range list.Items {
			n := &list.Items[i]
			if !f.holds(n.Name) {
				continue
			}
			if n.Labels[fleetname.Label] == f.cfg.Fleet {
				adoptable = append(adoptable, *n)
				continue
			}
			owner := "no fleet label"
			if v, ok := n.Labels[fleetname.Label]; ok {
				owner = fleetname.Label + "=" + v
			}
			foreign = append(foreign, n.Name+" ("+owner+")")
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if len(foreign) == 0 {
		if err := f.claimShard(ctx, adoptable); err != nil {
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

// claimShard takes the run's claim on its shard of the fleet (claim.go), unless another run holds
// the claim or one of nodes, the fleet's own Nodes with this run's names: taking them over would have
// two runs heartbeat for one Node, and the first to end would delete what the other still runs.
// Nodes whose run released its claim are adopted at once; those of any other run (a crashed one,
// one from before claims) once their heartbeats have stayed unchanged for a lease duration, which it
// watches for (holders.go) together with a claim another run holds. Nothing is written until it takes
// the claim, conditional on the version it read: of two runs starting at once, one refuses.
func (f *Fleet) claimShard(ctx context.Context, nodes []corev1.Node) error {
	c := newClaim(f.admin, f.cfg)
	lctx, cancel := context.WithTimeout(ctx, access.CheckTimeout)
	seen, err := c.read(lctx)
	cancel()
	if err != nil {
		return access.ExplainUnreachable(err)
	}
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	read := func(ctx context.Context) (map[string]beat, *coordinationv1.Lease, error) {
		lctx, cancel := context.WithTimeout(ctx, access.CheckTimeout)
		defer cancel()
		var now []corev1.Node
		if len(names) > 0 {
			all, err := fleetNodes(lctx, f.admin, f.cfg.Fleet, func(name string) bool { return names[name] })
			if err != nil {
				return nil, nil, err
			}
			now = all
		}
		leases, err := nodeLeases(lctx, f.admin, names)
		if err != nil {
			return nil, nil, fmt.Errorf("list node leases to check that no live run holds the fleet's nodes: %w", err)
		}
		l, err := c.read(lctx)
		return beats(now, leases), l, err
	}
	var leases map[string]*coordinationv1.Lease
	if len(nodes) > 0 {
		lctx, cancel := context.WithTimeout(ctx, access.CheckTimeout)
		leases, err = nodeLeases(lctx, f.admin, names)
		cancel()
		if err != nil {
			return access.ExplainUnreachable(fmt.Errorf("list node leases to check that no live run holds the fleet's nodes: %w", err))
		}
	}
	stopped := stoppedRun(seen)
	watch := map[string]beat{}
	for name, b := range beats(nodes, leases) {
		if b.run != f.cfg.RunID && (stopped == "" || b.run != stopped) {
			watch[name] = b
		}
	}
	claimKey := "claim " + c.name
	if h := holder(seen); h != "" && h != f.cfg.RunID {
		watch[claimKey] = claimBeat(seen)
	}
	err = watchBeats(ctx, f.cfg.Clock, c.duration, f.cfg.Fleet, watch, func(ctx context.Context) (map[string]beat, error) {
		now, l, err := read(ctx)
		if err == nil && l != nil {
			now[claimKey] = claimBeat(l)
			seen = l
		}
		return now, err
	}, f.cfg.Log)
	var live *LiveRunError
	if errors.As(err, &live) {
		for run, held := range live.Runs {
			if slices.Contains(held, claimKey) {
				return &ClaimHeldError{Fleet: f.cfg.Fleet, Lease: c.name, Run: run, Shard: f.cfg.Shard, Renewed: true}
			}
		}
		return fmt.Errorf("%w; refusing to start, nothing was written: stop that run, or choose another --fleet or --name-prefix "+
			"(shards of one fleet: give each its own --shard i/n of one n)", live)
	}
	if err != nil {
		return access.ExplainUnreachable(err)
	}
	if _, ok := watch[claimKey]; ok {
		stopped = holder(seen) // it stopped renewing its claim: crashed
	}
	if err := c.take(ctx, seen, f.cfg.Clock.Now()); err != nil {
		return err
	}
	f.claim = c
	delete(watch, claimKey)
	f.acfg.Adoptable = func(name, run string, renewed time.Time) bool {
		if stopped != "" && run == stopped {
			return true
		}
		// Still the heartbeat that stayed unchanged while the run watched: no one renewed it since.
		b, ok := watch[name]
		return ok && (renewed.Equal(b.lease) || renewed.Equal(b.status))
	}
	return nil
}
