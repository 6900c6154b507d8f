package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/pause"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/report"
)

// compareCluster is the cluster one mode of fakelet compare is measured on.
type compareCluster struct {
	client   kubernetes.Interface
	newFleet func(fleet.Config) (*fleet.Fleet, error)
	sources  []scrape.Source
	target   report.Target
}

// clusterOf is the cluster of tgt, with every metrics endpoint it has: all of a local control
// plane's, else the apiserver's.
func clusterOf(tgt *target) (*compareCluster, error) {
	sources, err := measure.TargetSources(tgt.config, tgt.local)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(tgt.config))
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", tgt.config.Host, err)
	}
	return &compareCluster{
		client:   client,
		newFleet: func(cfg fleet.Config) (*fleet.Fleet, error) { return fleet.New(cfg, tgt.config) },
		sources:  sources,
		target:   report.Target{Server: tgt.config.Host, Description: tgt.description, Local: tgt.local != nil},
	}, nil
}

// compareFleet names each mode's fleet, and its nodes' prefix: two modes on one cluster never share
// a node name, so the second fleet's checks never see the first's nodes.
func compareFleet(mode heartbeat.Mode) string { return "compare-" + string(mode) }

// noFleetsLeft refuses a cluster that already has Nodes of the compare fleets (a compare killed
// before its cleanup): they would be adopted and measured as part of a mode.
func noFleetsLeft(ctx context.Context, c kubernetes.Interface, modes []heartbeat.Mode) error {
	for _, mode := range modes {
		name := compareFleet(mode)
		n, err := fleetNodes(ctx, c, name)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("the cluster already has %d Node(s) of fleet %s, left by an earlier fakelet compare: "+
				"delete them first (fakelet cleanup --fleet %s, with the same --kubeconfig/--context)", n, name, name)
		}
	}
	return nil
}

func fleetNodes(ctx context.Context, c kubernetes.Interface, name string) (int, error) {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{agent.FleetLabel: name}).String()})
	if err != nil {
		return 0, fmt.Errorf("list the Nodes of fleet %s: %w", name, err)
	}
	return len(list.Items), nil
}

// fleetGoneTimeout bounds the wait for a deleted fleet's Nodes to disappear from the cluster.
const fleetGoneTimeout = time.Minute

// measureMode runs the fleet in one mode on cl and returns its report; its one phase, "steady", is the
// measured stretch. It returns once the fleet is deleted and no Node of it is left.
func measureMode(ctx context.Context, log io.Writer, cf compareFlags, mode heartbeat.Mode, cl *compareCluster) (_ *report.Report, note string, err error) {
	// No Lease watch: it would add watch events to lease mode only.
	s := measure.New(measure.Options{Sources: cl.sources, ScrapeInterval: cf.scrapeInterval, Client: cl.client})
	cfg := fleet.Config{Nodes: cf.nodes, Fleet: compareFleet(mode), NamePrefix: compareFleet(mode),
		Heartbeat: heartbeat.Config{Mode: mode}, Footprint: cf.footprint}
	cfg.Template.Images = cf.images
	if cf.images == 0 {
		cfg.Template.Images = -1
	}
	cfg = cfg.WithDefaults()
	f, err := cl.newFleet(cfg)
	if err != nil {
		return nil, "", err
	}
	if err := f.Preflight(ctx); err != nil {
		return nil, "", err
	}
	s.Observe(f)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	prefix := cfg.NamePrefix + "-"
	if err := s.Start(runCtx, func(name string) bool { return strings.HasPrefix(name, prefix) }); err != nil {
		return nil, "", err
	}
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	// stop ends the run: the fleet deletes its nodes, and its error is the cleanup's.
	stop := func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("fleet %s: %w", cfg.Fleet, err)
		}
		return nil
	}
	if note, err = steadyWindow(ctx, log, cf, mode, f, s, done); err != nil {
		s.Stop()
		return nil, "", errors.Join(err, stop())
	}
	s.Stop()
	if err := stop(); err != nil {
		return nil, "", err
	}
	if err := waitFleetGone(ctx, cl.client, cfg.Fleet); err != nil {
		return nil, "", err
	}
	rf := runFlags{images: cf.images}
	rf.report.scrapeInterval = cf.scrapeInterval
	rec := s.Record("compare-"+string(mode), parameters(rf, cfg), versions(), cl.target)
	return report.Build(rec), note, nil
}

// steadyWindow waits for the fleet to be Ready, untainted and with its Leases, then --settle, and
// records --duration of it as the phase "steady".
func steadyWindow(ctx context.Context, log io.Writer, cf compareFlags, mode heartbeat.Mode, f *fleet.Fleet, s *measure.Session, done <-chan error) (note string, err error) {
	cfg := f.Config()
	// Registration at the register rate, with room for a loaded machine: a tenth of a second a node.
	readyBy := time.Now().Add(time.Duration(float64(cf.nodes)/cfg.RegisterQPS*float64(time.Second)) + time.Duration(cf.nodes)*100*time.Millisecond + 2*time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for f.Progress().Ready < cf.nodes {
		select {
		case err := <-done:
			return "", fmt.Errorf("the fleet stopped before every node was Ready: %w", err)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
			if time.Now().After(readyBy) {
				return "", fmt.Errorf("%d of %d nodes Ready by %v", f.Progress().Ready, cf.nodes, readyBy.Format(time.TimeOnly))
			}
		}
	}
	// Registration is not steady state: every Lease must exist and the node lifecycle controller must
	// have removed the not-ready taints (a PATCH of each Node) before the settle time starts.
	quiet := func() bool {
		if s.TaintedNodes() > 0 {
			return false
		}
		for _, a := range f.Agents() {
			if mode == heartbeat.ModeLease && a.Stats().LastLeaseRenewal.IsZero() {
				return false
			}
		}
		return true
	}
	// The controller manager PATCHes each Node at its client's 20 requests/s, slower on a busy
	// apiserver: give it 0.3 s a node, then measure anyway and say so.
	quietBy := time.Now().Add(time.Duration(cf.nodes)*300*time.Millisecond + 2*time.Minute)
	for last := time.Now(); !quiet(); {
		if err := pause.For(ctx, time.Second); err != nil {
			return "", err
		}
		if time.Now().After(quietBy) {
			note = fmt.Sprintf("%s mode: %d nodes still tainted (or without a Lease) when the measurement began: "+
				"the node lifecycle controller's untainting is part of its load", mode, s.TaintedNodes())
			fmt.Fprintln(log, note)
			break
		}
		if time.Since(last) >= 30*time.Second {
			fmt.Fprintf(log, "%s mode: waiting for the node lifecycle controller: %d nodes still tainted\n", mode, s.TaintedNodes())
			last = time.Now()
		}
	}
	if note == "" {
		fmt.Fprintf(log, "%s mode: %d nodes Ready, untainted, with Leases; settling %v, then measuring %v\n", mode, cf.nodes, cf.settle, cf.duration)
	} else {
		fmt.Fprintf(log, "%s mode: settling %v, then measuring %v\n", mode, cf.settle, cf.duration)
	}
	if err := pause.For(ctx, cf.settle); err != nil {
		return "", err
	}
	s.PhaseBegan("steady", time.Now())
	if err := pause.For(ctx, cf.duration); err != nil {
		return "", err
	}
	s.PhaseEnded(time.Now())
	return note, nil
}

// waitFleetGone waits until the cluster has no Node of fleet name: its deletions are done before
// anything else is measured.
func waitFleetGone(ctx context.Context, c kubernetes.Interface, name string) error {
	var left int
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, fleetGoneTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		left, err = fleetNodes(ctx, c, name)
		return err == nil && left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d Node(s) of fleet %s still in the cluster %v after its deletion: %w", left, name, fleetGoneTimeout, err)
	}
	return nil
}
