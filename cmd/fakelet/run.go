package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/run"
	"fakelet.dev/fakelet/profiles"
)

func init() { subcommandFactories = append(subcommandFactories, newRunCommand) }

type runFlags struct {
	target                targetFlags
	fleet                 fleet.Config
	mode, identity        string
	footprint             string
	connections           string // --connections: a fleet.ConnectionMode or a number of shared connections
	leaseDuration         time.Duration
	renewInterval         time.Duration
	statusUpdateFrequency time.Duration
	statusReportFrequency time.Duration
	duration              time.Duration
	images                int
	procs                 int // --gomaxprocs
	metrics               run.MetricsOptions
	report                run.ReportOptions
	profiles              profileFlags
	shard                 shardFlags
	afterRun              afterRun
	nodeShape             nodeShapeFlags
	// fromProfile names the flags (without dashes) whose values --profile set, so that an error about
	// one says where its value came from; nodesFromProfile is fromProfile["nodes"].
	fromProfile      map[string]bool
	nodesFromProfile bool
}

func newRunCommand() *cobra.Command { return newRunCommandFor(&runFlags{}) }

// newRunCommandFor returns `fakelet run` with its flags bound to rf.
func newRunCommandFor(rf *runFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a fleet of fake kubelets against a control plane",
		Long: `Run a fleet of fake kubelets: each registers a Node, renews its Lease and patches its
NodeStatus with a v1.37 kubelet's requests and timing. With neither --kubeconfig nor --context,
fakelet uses the local control plane (starting it if none is up, and stopping it afterwards if
it started it); another cluster is only ever targeted by one of those flags. At the end fakelet
deletes the Nodes and Leases it created, unless --keep.

With --profile, the fleet plays a profile (docs/profiles.md): its phases begin once every node is
Ready, and the run ends after the last one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rf.fleet.Log, rf.fleet.CleanupLog = cmd.ErrOrStderr(), cmd.ErrOrStderr()
			cfg, plan, err := rf.prepare(cmd.Flags())
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runFleet(ctx, cmd, *rf, cfg, plan)
		},
	}
	f := cmd.Flags()
	addFleetFlags(f, rf)
	f.IntVar(&rf.fleet.Nodes, "nodes", 1000, "number of fake kubelets")
	f.IntVar(&rf.fleet.Zones, "zones", 0, "label nodes with topology.kubernetes.io/zone zone-1..zone-N round-robin (0: no zone label)")
	f.DurationVar(&rf.duration, "duration", 0, "how long to run (0: until Ctrl-C)")
	f.BoolVar(&rf.fleet.LegacyWire, "legacy-wire", false, "send lease renewals and watches over net/http and status patches through client-go, as before the wire package, to compare")
	_ = f.MarkHidden("legacy-wire")
	f.DurationVar(&rf.fleet.FlushWindow, "flush-window", 0, "how long a connection's writer may hold requests for more, to send them in one write (0: 1ms; negative: none)")
	_ = f.MarkHidden("flush-window")
	f.BoolVar(&rf.fleet.Keep, "keep", false, "leave the fleet's Nodes and Leases in the cluster at the end")
	addMetricsFlags(f, &rf.metrics)
	addProfileFlags(f, &rf.profiles)
	addShardFlags(f, &rf.shard)
	addReportFlags(f, &rf.report)
	addAfterRunFlag(f, &rf.afterRun)
	return cmd
}

// addFleetFlags binds the flags that say what fleet runs on which target, which fakelet run and
// fakelet capacity share.
func addFleetFlags(f *pflag.FlagSet, rf *runFlags) {
	f.StringVar(&rf.target.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to target (default: the local control plane)")
	f.StringVar(&rf.target.context, "context", "", "kubeconfig context of the cluster to target (default: the local control plane)")
	f.StringVar(&rf.target.controlPlaneDir, "controlplane-dir", controlplane.DefaultDir, "directory of the local control plane")
	f.StringVar(&rf.target.binDir, "bin-dir", "", "directory of the control plane binaries (see fakelet controlplane up)")
	f.StringArrayVar(&rf.target.apiServerArgs, "apiserver-arg", nil, "extra kube-apiserver flag when fakelet starts the local control plane (repeatable)")
	f.StringArrayVar(&rf.target.controllerMgrArgs, "controller-manager-arg", nil, "extra kube-controller-manager flag when fakelet starts the local control plane (repeatable)")
	f.StringArrayVar(&rf.target.schedulerArgs, "scheduler-arg", nil, "extra kube-scheduler flag when fakelet starts the local control plane (repeatable)")
	addNodeShapeFlags(f, &rf.nodeShape)
	f.StringVar(&rf.fleet.NamePrefix, "name-prefix", fleetname.DefaultNamePrefix, "node i is named PREFIX-NNNNN")
	f.StringVar(&rf.fleet.Fleet, "fleet", fleetname.DefaultFleet, "fleet name, the value of the "+fleetname.Label+" label on every Node fakelet creates")
	f.StringVar(&rf.mode, "mode", string(heartbeat.ModeLease), "heartbeat mode: lease (a Lease every 10 s, status on change or every 5 m) or status (pre-Lease: a status patch every 10 s)")
	f.DurationVar(&rf.leaseDuration, "lease-duration", heartbeat.DefaultLeaseDurationSeconds*time.Second, "lease duration (whole seconds); the lease is renewed every quarter of it")
	f.DurationVar(&rf.renewInterval, "renew-interval", 0, "lease renew interval (default: a quarter of --lease-duration)")
	f.DurationVar(&rf.statusUpdateFrequency, "status-update-frequency", heartbeat.DefaultStatusUpdateFrequency, "how often each kubelet recomputes its node status")
	f.DurationVar(&rf.statusReportFrequency, "status-report-frequency", heartbeat.DefaultStatusReportFrequency, "how often an unchanged status is patched in lease mode")
	f.StringVar(&rf.connections, "connections", string(fleet.ConnectionsShared), "shared: the kubelets share one set of HTTP/2 connections per 1000 nodes (or N sets: a number); per-node: each kubelet has a TLS connection of its own for all its requests, as real kubelets do, with a client certificate of its own on the local control plane")
	f.DurationVar(&rf.fleet.Coalesce, "coalesce", 0, "send the heartbeats due within each step of this length together at its end: about half the fleet's CPU at 1000 nodes, but the control plane batches them too and costs less than under kubelets' independent timing (docs/performance.md); 0: each at its own time")
	f.Float64Var(&rf.fleet.RegisterQPS, "register-qps", fleet.DefaultRegisterQPS, "the ceiling of the registration rate, kubelets started (and so Nodes registered) per second: registration starts at 10/s and paces itself by the server's answers (faster while they are fast, halved on a 429, a 5xx, a timeout or latency well above its floor), never above this")
	f.DurationVar(&rf.fleet.PodTiming.ImagePull, "pod-image-pull-delay", 0, "the fake runtime's image pull before each pod's containers are created (0: present, the hollow kubelet's); annotation "+agent.PodAnnotationImagePull)
	f.DurationVar(&rf.fleet.PodTiming.Start, "pod-start-delay", 0, "from a container's creation to its process running; annotation "+agent.PodAnnotationStart)
	f.DurationVar(&rf.fleet.PodTiming.Ready, "pod-ready-delay", 0, "from a container running to ready; annotation "+agent.PodAnnotationReady)
	f.DurationVar(&rf.fleet.PodTiming.RunDuration, "pod-run-duration", 0, "how long the containers of a pod with restartPolicy Never or OnFailure (a Job's) run before they exit 0, unless they run `sleep N` (0: they exit as soon as they run); annotation "+agent.PodAnnotationRunDuration)
	addCleanupQPSFlag(f, &rf.fleet.CleanupQPS)
	f.StringVar(&rf.footprint, "footprint", string(agent.DefaultFootprint), "kubelet: every kubelet's watches and requests besides its heartbeats (docs/architecture.md); heartbeat: the heartbeats and the pods' status only")
	f.StringVar(&rf.identity, "identity", string(fleet.IdentityNode), "node: requests as system:node:<name> in system:nodes (impersonated), as kubelets; fleet: as the fleet's own credential")
	f.IntVar(&rf.procs, "gomaxprocs", 0, "threads running Go code at once (0: one per 500 heartbeats a second, at most the CPUs fakelet may use; the GOMAXPROCS environment variable overrides this default)")
	f.IntVar(&rf.images, "images", agent.MaxImages, "container images each node reports (0-50); they make up most of a Node's size")
	addInsecureFlag(f, &rf.target)
	addInClusterFlag(f, &rf.target)
}

// config checks each flag and turns them into a fleet configuration, whose heartbeat is base (a
// profile's, or the kubelet's defaults) with every heartbeat flag given laid over it. It is not
// resolved yet: the profile and the shard shape it further, and resolveFlags resolves it once.
func (rf *runFlags) config(base heartbeat.Config) (fleet.Config, error) {
	if err := rf.connectionFlag(); err != nil {
		return rf.fleet, err
	}
	if err := rf.checkFleetFlags(); err != nil {
		return rf.fleet, err
	}
	cfg := rf.fleet
	hb, err := rf.heartbeat(base)
	if err != nil {
		return cfg, err
	}
	if cfg.Footprint, err = agent.ParseFootprint(rf.footprint); err != nil {
		return cfg, fmt.Errorf("--footprint: %w", err)
	}
	if cfg.Identity, err = fleet.ParseIdentity(rf.identity); err != nil {
		return cfg, fmt.Errorf("--identity: %w", err)
	}
	if rf.report.GracePeriod < 0 {
		return cfg, fmt.Errorf("--node-monitor-grace-period must not be negative, got %v", rf.report.GracePeriod)
	}
	if rf.report.ScrapeInterval < minScrapeInterval {
		return cfg, fmt.Errorf("--scrape-interval %v: at least %v, since each scrape reads every component's /metrics and more would measure the scrapes",
			rf.report.ScrapeInterval, minScrapeInterval)
	}
	if a := rf.metrics.Addr; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return cfg, fmt.Errorf("--metrics-addr %q: want HOST:PORT: %w", a, err)
		}
	}
	if rf.procs < 0 {
		return cfg, fmt.Errorf("--gomaxprocs must not be negative, got %d", rf.procs)
	}
	if rf.images < 0 || rf.images > agent.MaxImages {
		return cfg, fmt.Errorf("--images must be between 0 and %d, got %d", agent.MaxImages, rf.images)
	}
	if err := rf.nodeShape.apply(&cfg.Template, cfg.PodsPerNode); err != nil {
		return cfg, err
	}
	cfg.Heartbeat = hb
	cfg.Template.Images = rf.images
	if rf.images == 0 {
		cfg.Template.Images = -1
	}
	return cfg, nil
}

// flag names a flag for an error: --name, and the profile when the value is the profile's.
func (rf *runFlags) flag(name string) string {
	if rf.fromProfile[name] {
		return fmt.Sprintf("--%s (from profile %s)", name, rf.profiles.profile)
	}
	return "--" + name
}

// runFleet runs the fleet in three stages (internal/run): set up what it needs, play it until the
// run ends, and finish with the summary, the report and the cleanup's outcome; then, with
// --after-run=wait, it holds. What set-up started is released at the end, in reverse order.
func runFleet(ctx context.Context, cmd *cobra.Command, rf runFlags, cfg fleet.Resolved, plan *profiles.Plan) error {
	run.SizeProcs(rf.procs, cfg.Config())
	o := rf.options(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, plan)
	o.GOGC = run.SizeGC(cfg.Config().Nodes)
	r, err := run.New(ctx, o)
	defer r.Close()
	if err != nil {
		return err
	}
	p, err := r.Play(ctx)
	if err != nil {
		return err // refused before anything was written: no summary to give
	}
	err = r.Finish(ctx, p)
	if err == nil && ctx.Err() == nil {
		rf.afterRun.hold(ctx, cmd.ErrOrStderr(), r.Served())
	}
	return err
}

// options are the run's flags as internal/run takes them, for the fleet cfg and its profile plan.
func (rf *runFlags) options(out, log io.Writer, cfg fleet.Resolved, plan *profiles.Plan) run.Options {
	return run.Options{
		Fleet: cfg, Plan: plan,
		Target:  func(ctx context.Context) (*run.Target, error) { return resolveTarget(ctx, rf.target, log) },
		Metrics: rf.metrics, Report: rf.report, Shard: rf.shard.options(),
		ReadyTimeout: rf.profiles.readyTimeout, Duration: rf.duration, Images: rf.images,
		CleanupCommand: cleanupCommand(cfg.Config().Fleet, rf.target),
		Out:            out, Log: log,
	}
}

// signalContext ends on the first SIGINT or SIGTERM; a second one exits at once.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sig:
			fmt.Fprintln(os.Stderr, "\nstopping: signal received (a second one quits at once, leaving what the run created)")
			cancel()
		case <-ctx.Done():
			return
		}
		<-sig
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(sig); cancel() }
}
