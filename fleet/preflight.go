package fleet

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

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
		perms := RunPermissions(f.cfg.Identity, NodeName(f.cfg.NamePrefix, f.cfg.FirstIndex),
			NodeName(f.cfg.NamePrefix, f.cfg.FirstIndex+f.cfg.Nodes-1))
		if f.cfg.PodsPerNode > 0 {
			perms = append(perms, PodPermissions(f.cfg.Identity)...)
		}
		if err := CheckPermissions(ctx, f.admin, perms); err != nil {
			return err
		}
	}
	var foreign []string
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
			if !f.holds(n.Name) || n.Labels[agent.FleetLabel] == f.cfg.Fleet {
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
