package main

import (
	"context"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/capacity"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/run"
)

func init() { subcommandFactories = append(subcommandFactories, newCapacityCommand) }

// capacityFlags are fakelet capacity's: the fleet as fakelet run has it (its --nodes is --max), the
// steps and the levels.
type capacityFlags struct {
	run   runFlags
	steps capacity.Config
	// verdictTimeout and lockstep are a sharded run's (capacity_shard.go); lockstep is nil unsharded.
	verdictTimeout time.Duration
	lockstep       *capacity.Lockstep
}

func newCapacityCommand() *cobra.Command { return newCapacityCommandFor(&capacityFlags{}) }

// newCapacityCommandFor returns `fakelet capacity` with its flags bound to cf.
func newCapacityCommandFor(cf *capacityFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "Grow a fleet in steps until the control plane breaks a service level: how many nodes it holds",
		Long: `Grow one fleet of fake kubelets in steps, from --start nodes by --step up to --max, on the
target (the local control plane unless --kubeconfig or --context, as fakelet run). Each step
registers its new nodes, runs --settle, then holds for --hold while its service levels are
measured: no false alarm (a node fakelet kept healthy marked Unknown, tainted or evicted), the
fleet's lease PUTs and status PATCHes at most 1 s at p99 as the apiserver measured them, no API
Priority and Fairness rejection of node traffic (the node-high priority level), the lease
renewal interval's p99 at most 10% over the renew interval, and no failed heartbeat. The run stops
at the first step that breaks one, deletes the fleet, and writes report.json, report.html and
perfdata.json: the largest size that held every level, the level that broke first and by how much,
and the control plane's CPU and memory at every step (docs/capacity.md).

With --shard i/n, each of n processes grows its slice of every step on one schedule from a start
they agree on (--start-at auto, the default), and all stop at the first step any of them saw
broken; merge their reports with fakelet report merge.

It grows kubelet load only: run a workload tool beside it for the load of other clients.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cf.run.fleet.Log, cf.run.fleet.CleanupLog = cmd.ErrOrStderr(), cmd.ErrOrStderr()
			cfg, err := cf.prepare(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runCapacity(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), cf, cfg)
		},
	}
	f := cmd.Flags()
	addFleetFlags(f, &cf.run)
	capacity.AddFlags(f, &cf.steps)
	f.StringVar(&cf.run.report.Dir, "out", "", "write report.json, report.html, perfdata.json and summary.txt here (default reports/capacity-<timestamp>/)")
	f.DurationVar(&cf.run.report.ScrapeInterval, "scrape-interval", 15*time.Second, "scrape the control plane's /metrics this often, besides at every step's settle and hold")
	addGracePeriodFlag(f, &cf.run.report.GracePeriod)
	addCapacityShardFlags(f, cf)
	return cmd
}

// prepare checks every flag before anything starts, and returns the fleet of the first step. The
// fleet's flags are checked as fakelet run checks them, at the largest step.
func (cf *capacityFlags) prepare(flags *pflag.FlagSet) (fleet.Resolved, error) {
	rf := &cf.run
	rf.fleet.Nodes = cf.steps.Max
	given, err := rf.config(heartbeat.Config{})
	if err != nil {
		return fleet.Resolved{}, err
	}
	if given, err = rf.shard.slice(given, flags); err != nil {
		return fleet.Resolved{}, err
	}
	atMax, err := resolveFlags(given)
	if err != nil {
		return atMax, err
	}
	cfg := atMax.Config()
	// The renewal level is relative to the kubelet's heartbeat period: its renew interval, or in
	// status mode (no Lease) its status update frequency, which the hold must span twice too.
	cf.steps.RenewInterval = cfg.Heartbeat.RenewInterval
	if cfg.Heartbeat.Mode == heartbeat.ModeStatus {
		cf.steps.RenewInterval = cfg.Heartbeat.StatusUpdateFrequency
	}
	if err := cf.steps.Validate(); err != nil {
		return fleet.Resolved{}, err
	}
	if err := cf.shard(cfg, flags); err != nil {
		return fleet.Resolved{}, err
	}
	if err := rf.checkLimits(cfg); err != nil {
		return fleet.Resolved{}, err
	}
	return atMax.WithFirstNodes(cf.nodes(cf.steps.Start))
}

// nodes is how many nodes this process runs in the step of a fleet of n: all of them, or its
// shard's part.
func (cf *capacityFlags) nodes(n int) int {
	if cf.lockstep == nil {
		return n
	}
	return cf.lockstep.Nodes(n)
}

// runCapacity sizes the process (GOMAXPROCS, GOGC) for the last step's fleet and grows the fleet step by step on the
// target (run.Run.Capacity), which writes the report and deletes the fleet. A step that breaks a
// level is the answer, not an error.
func runCapacity(ctx context.Context, out, log io.Writer, cf *capacityFlags, cfg fleet.Resolved) error {
	atMax := cfg.Config()
	atMax.Nodes = cf.nodes(cf.steps.Max)
	procs := cf.run.procs
	if procs == 0 && os.Getenv("GOMAXPROCS") == "" {
		procs = run.FleetProcs(atMax, runtime.GOMAXPROCS(0)) // for the last step's fleet, not the first's
	}
	run.SizeProcs(procs, cfg.Config())
	o := cf.run.options(out, log, cfg, nil)
	o.GOGC = run.SizeGC(atMax.Nodes) // likewise
	o.Metrics.Addr = ""              // no metrics server: the report is the answer
	r, err := run.New(ctx, o)
	defer r.Close()
	if err != nil {
		return err
	}
	return r.Capacity(ctx, cf.steps, cf.lockstep)
}
