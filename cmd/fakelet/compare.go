package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/report"
	"fakelet.dev/fakelet/scrape"
)

func init() { subcommandFactories = append(subcommandFactories, newCompareCommand) }

type compareFlags struct {
	nodes          int
	duration       time.Duration
	settle         time.Duration
	images         int
	scrapeInterval time.Duration
	reportDir      string
	workDir        string
	binDir         string
	apiServerArgs  []string
	ctrlMgrArgs    []string
}

func newCompareCommand() *cobra.Command {
	var cf compareFlags
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Measure the same fleet in lease and in status heartbeat mode, side by side",
		Long: `Run the same fleet twice, in lease mode and in status mode (the kubelet before Leases: a full
status patch every 10 s), each on a fresh local control plane, and print a table of what each
cost the control plane, with a ratio column: requests, bytes, watch events, etcd writes, CPU and
latency. Each run measures --duration once every node is Ready, untainted and has its Lease,
and --settle has passed, so registration is not counted. This reproduces the argument of
KEP-589 (Efficient Node Heartbeats).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cf.nodes < 1 || cf.duration <= 0 || cf.settle < 0 || cf.scrapeInterval <= 0 {
				return fmt.Errorf("--nodes, --duration and --scrape-interval must be positive and --settle not negative")
			}
			if cf.images < 0 || cf.images > agent.MaxImages {
				return fmt.Errorf("--images must be between 0 and %d, got %d", agent.MaxImages, cf.images)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runCompare(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), cf)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cf.nodes, "nodes", 500, "number of fake kubelets in each run")
	f.DurationVar(&cf.duration, "duration", 2*time.Minute, "how long each run is measured, once every node is Ready")
	f.DurationVar(&cf.settle, "settle", 30*time.Second, "wait this long after every node is Ready, untainted and has its Lease, before measuring")
	f.IntVar(&cf.images, "images", agent.MaxImages, "container images each node reports (0-50); they make up most of a Node's size")
	f.DurationVar(&cf.scrapeInterval, "scrape-interval", scrape.DefaultInterval, "scrape the control plane's /metrics this often")
	f.StringVar(&cf.reportDir, "report-dir", "", "write each mode's report under DIR/lease and DIR/status, and compare.json (default reports/compare-<timestamp>/)")
	f.StringVar(&cf.workDir, "controlplane-dir", "", "parent directory of the two control planes (default: a temporary directory, removed afterwards)")
	f.StringVar(&cf.binDir, "bin-dir", "", "directory of the control plane binaries (see fakelet controlplane up)")
	f.StringArrayVar(&cf.apiServerArgs, "apiserver-arg", nil, "extra kube-apiserver flag (repeatable)")
	f.StringArrayVar(&cf.ctrlMgrArgs, "controller-manager-arg", nil, "extra kube-controller-manager flag (repeatable)")
	return cmd
}

func runCompare(ctx context.Context, out, log io.Writer, cf compareFlags) error {
	work := cf.workDir
	if work == "" {
		tmp, err := os.MkdirTemp("", "fakelet-compare-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		work = tmp
	}
	dir := cf.reportDir
	if dir == "" {
		dir = filepath.Join("reports", "compare-"+time.Now().Format("20060102-150405"))
	}
	c := &report.Comparison{Nodes: cf.nodes, Duration: cf.duration.String()}
	for _, mode := range []agent.Mode{agent.ModeLease, agent.ModeStatus} {
		r, note, err := compareSide(ctx, log, cf, mode, filepath.Join(work, string(mode)))
		if err != nil {
			return fmt.Errorf("%s mode: %w", mode, err)
		}
		if note != "" {
			c.Notes = append(c.Notes, note)
		}
		if err := r.WriteDir(filepath.Join(dir, string(mode))); err != nil {
			return err
		}
		c.Sides = append(c.Sides, report.Side{Mode: string(mode), Load: r.Load.Phases[0]})
	}
	fmt.Fprintln(out)
	if err := c.WriteText(out); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "compare.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write compare.json: %w", err)
	}
	fmt.Fprintf(log, "reports: %s\n", dir)
	return nil
}

// compareSide runs the fleet in one mode on a fresh control plane in dir and returns its report; its
// one phase, "steady", is the measured stretch.
func compareSide(ctx context.Context, log io.Writer, cf compareFlags, mode agent.Mode, dir string) (_ *report.Report, note string, err error) {
	fmt.Fprintf(log, "%s mode: starting a fresh control plane in %s\n", mode, dir)
	cp, err := controlplane.Up(ctx, controlplane.Options{
		Dir: dir, BinDir: cf.binDir, Progress: io.Discard,
		APIServerArgs: cf.apiServerArgs, ControllerManagerArgs: cf.ctrlMgrArgs,
	})
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if err := cp.Down(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(log, "stop the control plane in %s: %v\n", dir, err)
		}
	}()
	sources, err := scrape.ControlPlaneSources(cp)
	if err != nil {
		return nil, "", err
	}
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return nil, "", err
	}
	// No Lease watch: it would add watch events to lease mode only.
	s := measure.New(measure.Options{Sources: sources, ScrapeInterval: cf.scrapeInterval, Client: client})
	cfg := fleet.Config{Nodes: cf.nodes, Heartbeat: agent.Heartbeat{Mode: mode}, Recorder: s.Recorder()}
	cfg.Template.Images = cf.images
	if cf.images == 0 {
		cfg.Template.Images = -1
	}
	cfg = cfg.WithDefaults()
	f, err := fleet.New(cfg, cp.AdminConfig())
	if err != nil {
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
	// Registration at the register rate, with room for a loaded machine: a tenth of a second a node.
	readyBy := time.Now().Add(time.Duration(float64(cf.nodes)/cfg.RegisterQPS*float64(time.Second)) + time.Duration(cf.nodes)*100*time.Millisecond + 2*time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for f.Progress().Ready < cf.nodes {
		select {
		case err := <-done:
			return nil, "", fmt.Errorf("the fleet stopped before every node was Ready: %w", err)
		case <-ctx.Done():
			cancel()
			<-done
			return nil, "", ctx.Err()
		case <-tick.C:
			if time.Now().After(readyBy) {
				cancel()
				<-done
				return nil, "", fmt.Errorf("%d of %d nodes Ready by %v", f.Progress().Ready, cf.nodes, readyBy.Format(time.TimeOnly))
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
			if mode == agent.ModeLease && a.Stats().LastLeaseRenewal.IsZero() {
				return false
			}
		}
		return true
	}
	// The controller manager PATCHes each Node at its client's 20 requests/s, slower on a busy
	// apiserver: give it 0.3 s a node, then measure anyway and say so.
	quietBy := time.Now().Add(time.Duration(cf.nodes)*300*time.Millisecond + 2*time.Minute)
	for last := time.Now(); !quiet(); {
		if err := sleep(ctx, time.Second); err != nil {
			cancel()
			<-done
			return nil, "", err
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
	fmt.Fprintf(log, "%s mode: %d nodes Ready, untainted, with Leases; settling %v, then measuring %v\n", mode, cf.nodes, cf.settle, cf.duration)
	if err := sleep(ctx, cf.settle); err != nil {
		cancel()
		<-done
		return nil, "", err
	}
	s.PhaseBegan("steady", time.Now())
	if err := sleep(ctx, cf.duration); err != nil {
		cancel()
		<-done
		return nil, "", err
	}
	s.PhaseEnded(time.Now())
	s.Stop()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(log, "%s mode: %v\n", mode, err)
	}
	rf := runFlags{images: cf.images}
	rf.report.scrapeInterval = cf.scrapeInterval
	rec := s.Record("compare-"+string(mode), parameters(rf, cfg), versions(), report.Target{
		Server: cp.APIServerURL, Description: fmt.Sprintf("%s (local control plane in %s)", cp.APIServerURL, cp.Dir), Local: true,
	})
	return report.Build(rec), note, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
