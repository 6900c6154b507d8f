package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/bench"
)

func init() { subcommandFactories = append(subcommandFactories, newBenchCommand) }

func newBenchCommand() *cobra.Command {
	o := bench.Options{}
	var sizes, footprints, out, peer, target string
	var peerArgs []string
	ref := referenceFlags{}
	pods := podsFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure what fleets of several sizes cost fakelet and the control plane",
		Long: `For each size and each footprint (--footprints), start a fresh local control plane, run a
fleet in its own fakelet process until every node is Ready, let registration settle and wait
until the controllers have stopped writing the Nodes (the TTL controller annotates every Node
again each time the cluster grows past 100, 500, 1000 or 2000 nodes, at the controller manager's
20 requests a second, and the fleet's watches decode each write), then measure a steady window:
CPU time and memory of fakelet, kube-apiserver, etcd and kube-controller-manager from /proc, lease
PUTs and their latency from the apiserver's metrics, the fleet's own heartbeat counts and lease
renewal intervals, and the watches the fleet held and the apiserver served.
Prints two Markdown tables (and writes them to --out): every fleet's costs, and what each
footprint cost per node, with the kubelet footprint against the heartbeat one at each size and
against issue 15's targets.

With --peer kwok, each size goes on after the heartbeat footprint's fleet (kwok renews Leases
and sends none of a kubelet's other requests): the fleet stops and leaves its Nodes and Leases,
kwok (built by make kwok) takes them over on the same control plane, renewing the Leases as the
kubelet does (40 s, every 10 s), and is measured over a window as long; a third table sets the
two side by side: CPU per lease PUT, CPU as a share of the apiserver's, RSS.

With --reference kubemark, compare fakelet's agents with the real kubelet instead: on one fresh
control plane whose apiserver audits node requests, run --nodes kubemark hollow kubelets and as
many fakelet agents, through a startup, a steady, a pods and a restart window (--windows), and
print each node's requests per window and class (a pod's own per pod in the pods window, whose
pods the scheduler places), hollow kubelet against fakelet, with the known
differences and their reasons (docs/fidelity.md).

With --target stand-in, each fleet runs against fakelet's stand-in for kube-apiserver instead of a
control plane: a benchmark target only, in a process of its own, that answers the fleet's requests
as an apiserver does on the wire from memory, so that the fleet's own costs (CPU per renewal,
RSS per node, renewal interval and send lag) are measured at sizes no co-located apiserver holds.
It prints one table of those, with the stand-in's own CPU and memory beside them.

With --pods-per-node N (without --reference), each fleet goes on after its window: Deployments of
the bench's own, N pods for every node in all, are created, the controller manager creates their
pods and the scheduler places them on the fleet's nodes; once all are Running (a watch of them), or
--pods-timeout, and --settle, a second window as long is measured with them. A third table gives the
rollout (its times and every process's CPU, and how much the controller manager's and the
scheduler's client-side rate limits held them back), the two windows side by side, and what a pod
costs the fleet and the apiserver.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Target, err = bench.ParseTarget(target); err != nil {
				return fmt.Errorf("--target: %w", err)
			}
			if o.Target == bench.TargetStandIn {
				if err := standInBenchFlags(cmd, ref, peer, peerArgs, o); err != nil {
					return err
				}
			}
			if ref.name != "" || ref.flagsUsed(cmd) {
				if peer != "" || len(peerArgs) > 0 {
					return fmt.Errorf("--reference and --peer are two benches: give one")
				}
				if len(o.FleetCPUs) > 0 {
					return fmt.Errorf("--fleet-cpus places fleets apart from their target; --reference runs kubemark and fakelet on one control plane")
				}
				return ref.run(cmd, o.Dir, o.BinDir, out)
			}
			if o.Sizes, err = bench.ParseSizes(sizes); err != nil {
				return fmt.Errorf("--sizes: %w", err)
			}
			if o.Footprints, err = bench.ParseFootprints(footprints); err != nil {
				return fmt.Errorf("--footprints: %w", err)
			}
			if err := pods.apply(cmd, ref.podsPerNode, &o, peer != ""); err != nil {
				return err
			}
			if o.Steady <= 0 || o.Settle < 0 || o.RegisterTimeout <= 0 {
				return fmt.Errorf("--steady and --register-timeout must be positive, --settle not negative")
			}
			for _, a := range o.RunArgs {
				if a == "--footprint" || strings.HasPrefix(a, "--footprint=") {
					return fmt.Errorf("--run-arg %s: give the footprints with --footprints", a)
				}
			}
			for _, kv := range o.RunEnv {
				if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
					return fmt.Errorf("--run-env %q: want NAME=VALUE", kv)
				}
			}
			if peer != "" {
				for _, a := range o.RunArgs {
					if strings.HasPrefix(a, "--lease-duration") {
						return fmt.Errorf("--run-arg %s: with --peer both run at the kubelet's %d s lease, which kwok is given; drop it", a, bench.KwokLeaseDuration)
					}
				}
				p, err := bench.NewPeer(peer, o.BinDir)
				if err != nil {
					return fmt.Errorf("--peer: %w", err)
				}
				if len(peerArgs) > 0 {
					args := p.Args
					p.Args = func(kubeconfig, dir string) ([]string, error) {
						a, err := args(kubeconfig, dir)
						return append(a, peerArgs...), err
					}
				}
				o.Peer = &p
			} else if len(peerArgs) > 0 {
				return fmt.Errorf("--peer-arg needs --peer")
			}
			if o.Fakelet, err = os.Executable(); err != nil {
				return err
			}
			if o.Dir, err = filepath.Abs(o.Dir); err != nil {
				return err
			}
			o.Log = cmd.ErrOrStderr()
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			results, runErr := bench.Run(ctx, o)
			write := func(w io.Writer) { writeBenchTables(w, results, o.Peer != nil) }
			if o.Target == bench.TargetStandIn {
				write = func(w io.Writer) { bench.WriteStandInTable(w, results) }
			}
			write(cmd.OutOrStdout())
			if out != "" && len(results) > 0 {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				how := fmt.Sprintf("--sizes %s --footprints %s --steady %v", sizes, joinFootprints(o.Footprints), o.Steady)
				if o.Peer != nil {
					how += " --peer " + peer
				}
				if o.Target == bench.TargetStandIn {
					how += " --target " + o.Target
				}
				if f := cmd.Flags().Lookup("fleet-cpus"); f.Changed {
					how += " --fleet-cpus " + strings.Trim(f.Value.String(), "[]")
				}
				if p := pods.how(o); p != "" {
					how += " " + p
				}
				fmt.Fprintf(f, "Measured %s with `fakelet bench %s`.\n\n", time.Now().UTC().Format("2006-01-02"), how)
				write(f)
			}
			if runErr != nil {
				return runErr
			}
			for _, r := range results {
				if r.Peer != nil && r.Peer.Err != "" {
					return fmt.Errorf("%d nodes: %s: %s", r.Nodes, r.Peer.Name, r.Peer.Err)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sizes, "sizes", "1000,2000,5000,10000", "fleet sizes, comma-separated")
	f.StringVar(&footprints, "footprints", string(agent.FootprintHeartbeat)+","+string(agent.FootprintKubelet),
		"the footprints measured at every size, comma-separated, each fleet on a fresh control plane: kubelet, heartbeat (fakelet run's --footprint)")
	f.DurationVar(&o.Steady, "steady", time.Minute, "the measured window")
	f.DurationVar(&o.Settle, "settle", 20*time.Second, "wait between every node being Ready and the window")
	f.DurationVar(&o.RegisterTimeout, "register-timeout", 10*time.Minute, "give up waiting for every node to be Ready, and then for the controllers' writes to the Nodes to end (the window begins anyway)")
	f.Float64Var(&o.RegisterQPS, "register-qps", 200, "the fleets' --register-qps")
	f.StringVar(&o.Dir, "dir", ".fakelet/bench", "where the control planes and fleet logs go")
	f.StringVar(&o.BinDir, "bin-dir", "", "directory of the control plane binaries")
	f.StringArrayVar(&o.RunArgs, "run-arg", nil, "extra `fakelet run` flag for every fleet (repeatable), such as --run-arg=--lease-duration=400s")
	f.StringArrayVar(&o.RunEnv, "run-env", nil, "extra NAME=VALUE in the environment of each fleet's process, not the control plane's, such as --run-env GOGC=200 (repeatable)")
	f.StringArrayVar(&o.APIServerArgs, "apiserver-arg", nil, "extra kube-apiserver flag (repeatable)")
	f.StringVar(&out, "out", "", "also write the tables to this file")
	f.StringVar(&peer, "peer", "", "after each size's heartbeat footprint fleet (or its only one), hand its Nodes to this other fake kubelet and measure it the same way: "+strings.Join(bench.Peers, ", "))
	f.StringArrayVar(&peerArgs, "peer-arg", nil, "extra flag for the peer (repeatable), such as --peer-arg=--v=INFO")
	f.StringVar(&target, "target", bench.TargetLocal, "what the fleets run against: "+bench.TargetLocal+" (a fresh local control plane each) or "+
		bench.TargetStandIn+" (fakelet's stand-in for kube-apiserver, a benchmark target only, to measure the fleet alone)")
	f.IntSliceVar(&o.FleetCPUs, "fleet-cpus", nil, "run each fleet (and --peer) on these CPUs only, comma-separated, and the target on the others: the fleet measured apart from the server it loads, as on a machine of its own")
	ref.add(f)
	pods.add(f)
	return cmd
}

// writeBenchTables writes every fleet's costs, then each footprint's per node, then with a peer the
// peer beside fakelet.
func writeBenchTables(w io.Writer, results []bench.Result, peer bool) {
	bench.WriteTable(w, results)
	fmt.Fprintln(w)
	bench.WriteFootprintTable(w, results)
	if peer {
		fmt.Fprintln(w)
		bench.WritePeerTable(w, results)
	}
	if slices.ContainsFunc(results, func(r bench.Result) bool { return r.Pods != nil }) {
		fmt.Fprintln(w)
		bench.WritePodsTable(w, results)
	}
}

func joinFootprints(fps []agent.Footprint) string {
	s := make([]string, len(fps))
	for i, fp := range fps {
		s[i] = string(fp)
	}
	return strings.Join(s, ",")
}
