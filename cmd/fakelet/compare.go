package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/compare"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/run"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/report"
)

func init() { subcommandFactories = append(subcommandFactories, newCompareCommand) }

type compareFlags struct {
	nodes          int
	duration       time.Duration
	settle         time.Duration
	images         int
	scrapeInterval time.Duration
	reportDir      string
	// target is the one cluster of --same-cluster; without it, controlPlaneDir is the parent of the
	// two fresh control planes.
	target      targetFlags
	sameCluster bool
	footprint   agent.Footprint
	footprintIn string // --footprint, as given
}

func newCompareCommand() *cobra.Command {
	var cf compareFlags
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Measure the same fleet in lease and in status heartbeat mode, side by side",
		Long: `Run the same fleet twice, in lease mode and in status mode (the kubelet before Leases: a full
status patch every 10 s), and print a table of what each cost the control plane, with a ratio
column: requests, bytes, watch events, etcd writes, CPU and latency. Each run measures --duration
once every node is Ready, untainted and has its Lease, and --settle has passed, so registration
is not counted. This reproduces the argument of KEP-589 (Efficient Node Heartbeats).

By default each mode runs on a fresh local control plane. With --same-cluster, --kubeconfig or
--context both run on one cluster, one after the other: lease mode's fleet (compare-lease) is
deleted, and --settle passes, before status mode's (compare-status) registers; each mode's
numbers are increases within its own measured window. Without --kubeconfig and --context that
cluster is the local control plane in --controlplane-dir, started if none is up.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cf.check(); err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runCompare(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), cf)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cf.nodes, "nodes", 500, "number of fake kubelets in each run")
	f.DurationVar(&cf.duration, "duration", 2*time.Minute, "how long each run is measured, once every node is Ready")
	f.DurationVar(&cf.settle, "settle", 30*time.Second, "wait this long after every node is Ready, untainted and has its Lease, before measuring; on one cluster, also between the two runs")
	f.StringVar(&cf.footprintIn, "footprint", string(agent.DefaultFootprint), "which of a kubelet's requests both modes' kubelets make: kubelet or heartbeat (as fakelet run's --footprint)")
	f.IntVar(&cf.images, "images", agent.MaxImages, "container images each node reports (0-50); they make up most of a Node's size")
	f.DurationVar(&cf.scrapeInterval, "scrape-interval", scrape.DefaultInterval, "scrape the control plane's /metrics this often")
	f.StringVar(&cf.reportDir, "out", "", "write each mode's report under DIR/lease and DIR/status, and compare.json (default reports/compare-<timestamp>/)")
	aliasFlag(f, "report-dir", "out")
	f.BoolVar(&cf.sameCluster, "same-cluster", false, "run both modes on one cluster, one after the other: the one --kubeconfig/--context names, else the local control plane in --controlplane-dir")
	f.StringVar(&cf.target.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to run both modes on (implies --same-cluster)")
	f.StringVar(&cf.target.context, "context", "", "kubeconfig context of the cluster to run both modes on (implies --same-cluster)")
	f.StringVar(&cf.target.controlPlaneDir, "controlplane-dir", "", "with --same-cluster, the local control plane's directory (default "+controlplane.DefaultDir+
		"); else the parent directory of the two fresh control planes (default: a temporary directory, removed afterwards)")
	f.StringVar(&cf.target.binDir, "bin-dir", "", "directory of the control plane binaries (see fakelet controlplane up)")
	f.StringArrayVar(&cf.target.apiServerArgs, "apiserver-arg", nil, "extra kube-apiserver flag when fakelet starts a local control plane (repeatable)")
	f.StringArrayVar(&cf.target.controllerMgrArgs, "controller-manager-arg", nil, "extra kube-controller-manager flag when fakelet starts a local control plane (repeatable)")
	f.StringArrayVar(&cf.target.schedulerArgs, "scheduler-arg", nil, "extra kube-scheduler flag when fakelet starts a local control plane (repeatable)")
	addInsecureFlag(f, &cf.target)
	return cmd
}

// check refuses flags that cannot work, before anything starts.
func (cf *compareFlags) check() error {
	if cf.nodes < 1 || cf.duration <= 0 || cf.settle < 0 || cf.scrapeInterval <= 0 {
		return fmt.Errorf("--nodes, --duration and --scrape-interval must be positive and --settle not negative")
	}
	if cf.images < 0 || cf.images > agent.MaxImages {
		return fmt.Errorf("--images must be between 0 and %d, got %d", agent.MaxImages, cf.images)
	}
	if cf.footprintIn != "" || cf.footprint == "" {
		fp, err := agent.ParseFootprint(cmp.Or(cf.footprintIn, string(agent.DefaultFootprint)))
		if err != nil {
			return fmt.Errorf("--footprint: %w", err)
		}
		cf.footprint = fp
	}
	if cf.target.kubeconfig != "" || cf.target.context != "" {
		if cf.target.controlPlaneDir != "" || len(cf.target.apiServerArgs)+len(cf.target.controllerMgrArgs)+len(cf.target.schedulerArgs) > 0 {
			return fmt.Errorf("--controlplane-dir, --apiserver-arg, --controller-manager-arg and --scheduler-arg are for a local control plane, " +
				"--kubeconfig and --context name another cluster: give one or the other")
		}
		cf.sameCluster = true
	}
	if cf.target.insecure && !cf.sameCluster {
		return fmt.Errorf("--insecure-skip-tls-verify is for a cluster given by --kubeconfig or --context")
	}
	return nil
}

func runCompare(ctx context.Context, out, log io.Writer, cf compareFlags) error {
	dir := cf.reportDir
	if dir == "" {
		dir = filepath.Join("reports", "compare-"+time.Now().Format("20060102-150405"))
	}
	o := cf.options(dir, log)
	var c *report.Comparison
	if cf.sameCluster {
		tf := cf.target
		if tf.controlPlaneDir == "" {
			tf.controlPlaneDir = controlplane.DefaultDir
		}
		tgt, err := resolveTarget(ctx, tf, log)
		if err != nil {
			return err
		}
		defer tgt.ReleaseOrSay(ctx, log)
		fmt.Fprintf(log, "target: %s\n", tgt.Description)
		if c, err = compare.OnOneCluster(ctx, o, tgt.Config, tgt.Local, tgt.Description); err != nil {
			return err
		}
	} else {
		up := func(ctx context.Context, dir string) (*controlplane.ControlPlane, error) {
			return controlplane.Up(ctx, controlplane.Options{
				Dir: dir, BinDir: cf.target.binDir, Progress: io.Discard,
				APIServerArgs: cf.target.apiServerArgs, ControllerManagerArgs: cf.target.controllerMgrArgs,
				SchedulerArgs: cf.target.schedulerArgs,
			})
		}
		var err error
		if c, err = compare.OnFreshClusters(ctx, o, cf.target.controlPlaneDir, up); err != nil {
			return err
		}
	}
	fmt.Fprintln(out)
	if err := c.WriteText(out); err != nil {
		return err
	}
	if err := compare.WriteJSON(c, dir); err != nil {
		return err
	}
	fmt.Fprintf(log, "reports: %s\n", dir)
	return nil
}

// options are the flags as the compare package takes them; each mode's report names its
// parameters as fakelet run's would.
func (cf compareFlags) options(dir string, log io.Writer) compare.Options {
	return compare.Options{
		Nodes: cf.nodes, Duration: cf.duration, Settle: cf.settle, ScrapeInterval: cf.scrapeInterval,
		Images: cf.images, Footprint: cf.footprint, Dir: dir,
		Parameters: func(cfg fleet.Resolved) record.Parameters { return run.Parameters(cfg, cf.images, cf.scrapeInterval) },
		Versions:   run.Versions(), Log: log,
	}
}
