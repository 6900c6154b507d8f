package compare

import (
	"context"
	"errors"
	"fmt"
	"time"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/pause"
	"fakelet.dev/fakelet/internal/run"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/report"
)

// measureMode runs the fleet in one mode on cl and returns its report; its one phase, "steady", is the
// measured stretch. It returns once the fleet is deleted and no Node of it is left.
func measureMode(ctx context.Context, o Options, mode heartbeat.Mode, cl *Cluster) (_ *report.Report, note string, err error) {
	// No Lease watch: it would add watch events to lease mode only.
	s := measure.New(measure.Options{Sources: cl.Sources, ScrapeInterval: o.ScrapeInterval, Client: cl.Client})
	given := fleet.Config{Nodes: o.Nodes, Fleet: compareFleet(mode), NamePrefix: compareFleet(mode),
		Heartbeat: heartbeat.Config{Mode: mode}, Footprint: o.Footprint}
	given.Template.Images = o.Images
	if o.Images == 0 {
		given.Template.Images = -1
	}
	resolved, err := given.Resolve()
	if err != nil {
		return nil, "", err
	}
	cfg := resolved.Config()
	f, err := cl.NewFleet(resolved)
	if err != nil {
		return nil, "", err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done, err := run.Launch(runCtx, f, s)
	if err != nil {
		return nil, "", err
	}
	// stop ends the run: the fleet deletes its nodes, and its error is the cleanup's.
	stop := func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("fleet %s: %w", cfg.Fleet, err)
		}
		return nil
	}
	if note, err = steadyWindow(ctx, o, mode, f, s, done); err != nil {
		s.Stop()
		return nil, "", errors.Join(err, stop())
	}
	s.Stop()
	if err := stop(); err != nil {
		return nil, "", err
	}
	if err := waitFleetGone(ctx, cl.Client, cfg.Fleet); err != nil {
		return nil, "", err
	}
	rec := s.Record("compare-"+string(mode), o.Parameters(resolved), o.Versions, cl.Target)
	return report.Build(rec), note, nil
}

// steadyWindow waits for the fleet to be Ready, untainted and with its Leases, then o.Settle, and
// records o.Duration of it as the phase "steady".
func steadyWindow(ctx context.Context, o Options, mode heartbeat.Mode, f *fleet.Fleet, s *measure.Session, done <-chan error) (note string, err error) {
	cfg := f.Config()
	// Registration at the register rate, with room for a loaded machine: a tenth of a second a node.
	readyBy := time.Now().Add(time.Duration(float64(o.Nodes)/cfg.RegisterQPS*float64(time.Second)) + time.Duration(o.Nodes)*100*time.Millisecond + 2*time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for f.Progress().Ready < o.Nodes {
		select {
		case err := <-done:
			return "", fmt.Errorf("the fleet stopped before every node was Ready: %w", err)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
			if time.Now().After(readyBy) {
				return "", fmt.Errorf("%d of %d nodes Ready by %v", f.Progress().Ready, o.Nodes, readyBy.Format(time.TimeOnly))
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
	quietBy := time.Now().Add(time.Duration(o.Nodes)*300*time.Millisecond + 2*time.Minute)
	for last := time.Now(); !quiet(); {
		if err := pause.For(ctx, time.Second); err != nil {
			return "", err
		}
		if time.Now().After(quietBy) {
			note = fmt.Sprintf("%s mode: %d nodes still tainted (or without a Lease) when the measurement began: "+
				"the node lifecycle controller's untainting is part of its load", mode, s.TaintedNodes())
			fmt.Fprintln(o.Log, note)
			break
		}
		if time.Since(last) >= 30*time.Second {
			fmt.Fprintf(o.Log, "%s mode: waiting for the node lifecycle controller: %d nodes still tainted\n", mode, s.TaintedNodes())
			last = time.Now()
		}
	}
	if note == "" {
		fmt.Fprintf(o.Log, "%s mode: %d nodes Ready, untainted, with Leases; settling %v, then measuring %v\n", mode, o.Nodes, o.Settle, o.Duration)
	} else {
		fmt.Fprintf(o.Log, "%s mode: settling %v, then measuring %v\n", mode, o.Settle, o.Duration)
	}
	if err := pause.For(ctx, o.Settle); err != nil {
		return "", err
	}
	s.PhaseBegan("steady", time.Now())
	if err := pause.For(ctx, o.Duration); err != nil {
		return "", err
	}
	s.PhaseEnded(time.Now())
	return note, nil
}
