package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/lockstep"
	"fakelet.dev/fakelet/profiles"
)

// Run is one run of a fleet: what New set up for it, and how to release that.
type Run struct {
	o        Options
	cfg      fleet.Resolved
	plan     *profiles.Plan
	out, log io.Writer

	m     *runMetrics
	tgt   *Target
	rr    *runReport
	start *lockstep.Start // with Shard.Auto
	f     *fleet.Fleet
	undo  []func() // released in reverse order
}

// Played is how the fleet's run ended.
type Played struct {
	err        error // the fleet's
	profileErr error // the profile's, if any
	summary    runSummary
}

// Close releases what New and the stages started, in reverse order.
func (r *Run) Close() {
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i]()
	}
}

// New starts the run's metrics, resolves its target (starting the local control plane if need be),
// agrees on a start with the other shards, starts the report and builds the fleet. The caller
// closes the Run, also when New fails.
func New(ctx context.Context, o Options) (*Run, error) {
	r := &Run{o: o, cfg: o.Fleet, plan: o.Plan, out: o.Out, log: o.Log}
	return r, r.setUp(ctx)
}

func (r *Run) setUp(ctx context.Context) error {
	m, err := startMetrics(r.o.Metrics, r.log)
	if err != nil {
		return err
	}
	r.m = m
	r.undo = append(r.undo, func() { m.stop(r.log) })
	tgt, err := r.o.Target(ctx)
	if err != nil {
		return err
	}
	r.tgt = tgt
	r.undo = append(r.undo, func() { tgt.ReleaseOrSay(ctx, r.log) })
	fmt.Fprintf(r.log, "target: %s\n", tgt.Description)
	r.nodeCredentials()
	start, err := r.o.Shard.coordinate(ctx, tgt.Config, r.cfg.Config().Fleet, r.log)
	if err != nil {
		return err
	}
	r.start = start
	r.undo = append(r.undo, func() {
		// A signal stops every shard (kubectl delete, Ctrl-C): the start Lease goes with the run.
		if err := start.Release(context.WithoutCancel(ctx), ctx.Err() != nil); err != nil {
			fmt.Fprintln(r.log, "start:", err)
		}
	})
	if r.rr, err = startReport(r.o.Report, tgt, m, r.log); err != nil {
		return err
	}
	if r.f, err = fleet.New(r.cfg, tgt.Config); err != nil {
		return err
	}
	m.RegisterFleet(r.f)
	cfg := r.f.Config()
	fmt.Fprintf(r.log, "fleet %s, run %s: %d nodes %s..%s, %s heartbeats, %s footprint, identity %s, %s, registering %g/s, GOMAXPROCS %d, GOGC %d\n",
		cfg.Fleet, cfg.RunID, cfg.Nodes, fleetname.NodeName(cfg.NamePrefix, cfg.FirstIndex), fleetname.NodeName(cfg.NamePrefix, cfg.FirstIndex+cfg.Nodes-1),
		cfg.Heartbeat.Mode, cfg.Footprint, cfg.Identity, connectionsText(cfg), cfg.RegisterQPS, runtime.GOMAXPROCS(0), r.o.GOGC)
	return nil
}

// Served says what the run's metrics server offers once the run is over.
func (r *Run) Served() string { return r.m.served() }

// nodeCredentials gives each node of a per-node run on the local control plane a client certificate
// of its own from the control plane's CA, as a kubelet's bootstrap leaves it; elsewhere fakelet has
// no CA key, and each node's connection impersonates its node.
func (r *Run) nodeCredentials() {
	if cfg := r.cfg.Config(); cfg.ConnectionMode != fleet.ConnectionsPerNode || cfg.Identity != fleet.IdentityNode || r.tgt.Local == nil {
		return
	}
	cp := r.tgt.Local
	if _, err := cp.CA(); err != nil {
		fmt.Fprintf(r.log, "per-node connections: the local control plane's CA cannot sign (%v): each node's connection impersonates it instead\n", err)
		return
	}
	r.cfg = r.cfg.WithNodeCredentials(func(node string) ([]byte, []byte, error) {
		return cp.IssueClientCert(controlplane.NodeUser(node), []string{controlplane.NodesGroup})
	})
}

// connectionsText says how a resolved fleet configuration's agents reach the apiserver.
func connectionsText(cfg fleet.Config) string {
	mode := string(cfg.ConnectionMode)
	if cfg.ConnectionMode == fleet.ConnectionsShared {
		mode = fmt.Sprintf("%s connections (%d sets)", mode, cfg.Connections)
	} else {
		mode += " connections"
	}
	return mode + " with the identity by " + fleet.IdentityOf(cfg)
}

// Play checks the cluster, starts the measurement and runs the fleet, and the profile if any, until
// Options.Duration, a signal, the profile's last phase or a failure ends the run. It returns an
// error alone when the run was refused before the fleet wrote anything.
func (r *Run) Play(ctx context.Context) (Played, error) {
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if r.o.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, r.o.Duration)
	}
	r.undo = append(r.undo, cancel)
	runCtx, endRun := context.WithCancel(runCtx) // a profile ends the run after its last phase
	r.undo = append(r.undo, endRun)
	var pr *profileRun
	if r.plan != nil {
		onPhase, onApplied := r.rr.profileHooks(r.plan, r.f)
		scfg := r.scenarioConfig()
		var err error
		if scfg.Client, err = workloadClient(r.tgt, r.plan); err != nil {
			return Played{}, err
		}
		pr, err = startProfile(runCtx, endRun, r.f, r.plan, scfg, r.log,
			metricsHooks(r.m), profileHooks{onPhase, onApplied})
		if err != nil {
			return Played{}, err
		}
	}
	begin := time.Now()
	progressDone := make(chan struct{})
	progressCtx, stopProgress := context.WithCancel(runCtx)
	go func() {
		defer close(progressDone)
		select {
		case <-r.f.Running():
			showProgress(progressCtx, r.log, r.f, 30*time.Second)
		case <-progressCtx.Done():
		}
	}()
	// Check the cluster before the report's watches start: a cluster that cannot be reached, a
	// credential that may not do what the run does, or a foreign Node with our names fails at once
	// with what is wrong, instead of as a watch that never syncs.
	done, runErr := Launch(runCtx, r.f, r.rr.session)
	if runErr == nil {
		runErr = <-done
	}
	stopProgress()
	<-progressDone
	elapsed := time.Since(begin)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		select {
		case <-r.f.Running():
		default:
			return Played{}, runErr
		}
	}
	p := Played{err: runErr, summary: summarize(r.tgt.Description, r.f, elapsed)}
	if pr != nil {
		endRun()
		p.profileErr = pr.wait()
		if rec := pr.runner.Record(); len(rec.Phases) > 0 {
			r.rr.session.EndWorkloads(rec.Phases[len(rec.Phases)-1].End)
		}
		p.summary.Profile = pr.summary(p.profileErr)
	}
	return p, nil
}

// Finish prints the summary, writes the report, says what the cleanup did, and returns the run's
// outcome: the fleet's error, else a profile's that failed (not one cut short by a signal or
// Options.Duration).
func (r *Run) Finish(ctx context.Context, p Played) error {
	cfg, runErr := r.cfg.Config(), p.err
	p.summary.render(r.out)
	if err := r.rr.finish(r.out, r.log, r.o, r.cfg); err != nil {
		fmt.Fprintln(r.log, "report:", err)
	}
	if !cfg.Keep && runErr == nil {
		what := "Nodes and Leases"
		if cfg.PodsPerNode > 0 {
			what = "pods, Nodes and Leases"
		}
		fmt.Fprintf(r.log, "deleted the fleet's %s (use --keep to leave them)\n", what)
	}
	if runErr == nil && p.profileErr != nil && !errors.Is(p.profileErr, context.Canceled) && !errors.Is(p.profileErr, context.DeadlineExceeded) {
		runErr = p.profileErr
	}
	return r.left(runErr)
}

// Left is err, and if the fleet's cleanup left something, how to remove it.
func (r *Run) left(err error) error {
	var left *fleet.LeftError
	if errors.As(err, &left) {
		err = fmt.Errorf("%w; remove what is left with: %s", err, r.o.CleanupCommand)
	}
	return err
}
