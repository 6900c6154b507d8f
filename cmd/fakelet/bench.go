package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/bench"
)

func init() { subcommandFactories = append(subcommandFactories, newBenchCommand) }

func newBenchCommand() *cobra.Command {
	o := bench.Options{}
	var sizes, out string
	ref := referenceFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure what fleets of several sizes cost fakelet and the control plane",
		Long: `For each size, start a fresh local control plane, run a fleet in its own fakelet process
until every node is Ready, let registration settle, then measure a steady window: CPU time and
memory of fakelet, kube-apiserver, etcd and kube-controller-manager from /proc, lease PUTs and
their latency from the apiserver's metrics, and the fleet's own heartbeat counts and lease
renewal intervals. Prints a Markdown table (and writes it to --out).

With --reference kubemark, compare fakelet's agents with the real kubelet instead: on one fresh
control plane whose apiserver audits node requests, run --nodes kubemark hollow kubelets and as
many fakelet agents, through a startup, a steady, a pods and a restart window (--windows), and
print each node's requests per window and class, hollow kubelet against fakelet, with the known
differences and their reasons (docs/fidelity.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ref.name != "" || ref.flagsUsed(cmd) {
				return ref.run(cmd, o.Dir, o.BinDir, out)
			}
			var err error
			if o.Sizes, err = bench.ParseSizes(sizes); err != nil {
				return fmt.Errorf("--sizes: %w", err)
			}
			if o.Steady <= 0 || o.Settle < 0 || o.RegisterTimeout <= 0 {
				return fmt.Errorf("--steady and --register-timeout must be positive, --settle not negative")
			}
			for _, kv := range o.RunEnv {
				if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
					return fmt.Errorf("--run-env %q: want NAME=VALUE", kv)
				}
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
			bench.WriteTable(cmd.OutOrStdout(), results)
			if out != "" && len(results) > 0 {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				fmt.Fprintf(f, "Measured %s with `fakelet bench --sizes %s --steady %v`.\n\n", time.Now().UTC().Format("2006-01-02"), sizes, o.Steady)
				bench.WriteTable(f, results)
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.StringVar(&sizes, "sizes", "1000,2000,5000,10000", "fleet sizes, comma-separated, each on a fresh control plane")
	f.DurationVar(&o.Steady, "steady", time.Minute, "the measured window")
	f.DurationVar(&o.Settle, "settle", 20*time.Second, "wait between every node being Ready and the window")
	f.DurationVar(&o.RegisterTimeout, "register-timeout", 10*time.Minute, "give up waiting for every node to be Ready")
	f.Float64Var(&o.RegisterQPS, "register-qps", 200, "the fleets' --register-qps")
	f.StringVar(&o.Dir, "dir", ".fakelet/bench", "where the control planes and fleet logs go")
	f.StringVar(&o.BinDir, "bin-dir", "", "directory of the control plane binaries")
	f.StringArrayVar(&o.RunArgs, "run-arg", nil, "extra `fakelet run` flag for every fleet (repeatable), such as --run-arg=--lease-duration=400s")
	f.StringArrayVar(&o.RunEnv, "run-env", nil, "extra NAME=VALUE in the environment of each fleet's process, not the control plane's, such as --run-env GOGC=200 (repeatable)")
	f.StringArrayVar(&o.APIServerArgs, "apiserver-arg", nil, "extra kube-apiserver flag (repeatable)")
	f.StringVar(&out, "out", "", "also write the table to this file")
	ref.add(f)
	return cmd
}
