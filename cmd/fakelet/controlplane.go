package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/controlplane"
)

func init() { subcommandFactories = append(subcommandFactories, newControlPlaneCommand) }

func newControlPlaneCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "controlplane",
		Short: "Start, inspect and stop a local etcd, kube-apiserver, kube-controller-manager and kube-scheduler",
		Long: `A local control plane for fakelet: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler on 127.0.0.1, each on free ports, run as detached processes that outlive the command. Everything
(state, logs, kubeconfig, certificates, etcd data) is under --controlplane-dir. The binaries come from
` + "`make controlplane`" + `.`,
	}
	cmd.AddCommand(newControlPlaneUpCommand(), newControlPlaneDownCommand(), newControlPlaneStatusCommand(),
		newControlPlanePrometheusConfigCommand())
	return cmd
}

func addControlPlaneDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "controlplane-dir", controlplane.DefaultDir, "directory of the control plane's state, logs, kubeconfig, certificates and etcd data")
	aliasFlag(cmd.Flags(), "dir", "controlplane-dir")
}

func newControlPlaneUpCommand() *cobra.Command {
	var opts controlplane.Options
	var prom prometheusFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local control plane, or reuse the healthy one already in --controlplane-dir",
		Long: `Start etcd, kube-apiserver, kube-controller-manager and kube-scheduler and wait until they
are ready.
A healthy control plane already in --controlplane-dir is reused; one left from a crash is stopped and
replaced. Extra component flags go last on each command line, so they override the defaults:
  fakelet controlplane up --apiserver-arg=--max-requests-inflight=800 --controller-manager-arg=--node-monitor-grace-period=40s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			begin := time.Now()
			opts.Progress = cmd.ErrOrStderr()
			opts.Prometheus = prom.options()
			cp, err := controlplane.Up(ctx, opts)
			if err != nil {
				return err
			}
			printUp(cmd.OutOrStdout(), cp, time.Since(begin))
			if opts.AuditNodes {
				fmt.Fprintf(cmd.OutOrStdout(), "audit log of node and admin requests: %s\n", controlplane.AuditLogPath(cp.Dir))
			}
			return nil
		},
	}
	addControlPlaneDirFlag(cmd, &opts.Dir)
	f := cmd.Flags()
	f.StringVar(&opts.BinDir, "bin-dir", "", "directory holding etcd, kube-apiserver, kube-controller-manager and kube-scheduler (default: beside fakelet, else the bin/ of the fakelet repository holding the working directory; never $PATH)")
	// StringArray, not StringSlice: a component flag may itself hold commas
	// (--apiserver-arg=--enable-admission-plugins=A,B).
	f.StringArrayVar(&opts.APIServerArgs, "apiserver-arg", nil, "extra kube-apiserver flag, such as --apiserver-arg=--max-requests-inflight=800 (repeatable)")
	f.StringArrayVar(&opts.ControllerManagerArgs, "controller-manager-arg", nil, "extra kube-controller-manager flag (repeatable)")
	f.StringArrayVar(&opts.SchedulerArgs, "scheduler-arg", nil, "extra kube-scheduler flag (repeatable)")
	f.StringArrayVar(&opts.EtcdArgs, "etcd-arg", nil, "extra etcd flag (repeatable)")
	f.BoolVar(&opts.KeepData, "keep-data", false, "keep etcd's data and the certificates of the previous control plane in --controlplane-dir (and keep the data at down)")
	f.BoolVar(&opts.AuditNodes, "audit-nodes", false, "have kube-apiserver write an audit log of kubelet and admin requests (Metadata level) to DIR/audit.log, as fakelet bench --reference does")
	f.DurationVar(&opts.StartTimeout, "start-timeout", controlplane.DefaultStartTimeout, "how long to wait for each component to become healthy")
	addPrometheusFlags(f, &prom)
	return cmd
}

func printUp(w io.Writer, cp *controlplane.ControlPlane, took time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "kubeconfig:\t%s\n", cp.Kubeconfig)
	fmt.Fprintf(tw, "server:\t%s\n", cp.APIServerURL)
	for _, ep := range cp.MetricsEndpoints() {
		fmt.Fprintf(tw, "%s metrics:\t%s\n", ep.Component, ep.URL)
	}
	if u := cp.PrometheusURL(); u != "" {
		fmt.Fprintf(tw, "prometheus:\t%s (config in %s)\n", u, controlplane.PrometheusDir(cp.Dir))
	}
	fmt.Fprintf(tw, "took:\t%s\n", took.Round(10*time.Millisecond))
	tw.Flush()
	fmt.Fprintf(w, "\nexport KUBECONFIG=%s\n", cp.Kubeconfig)
}

func newControlPlaneDownCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local control plane in --controlplane-dir and remove its state and etcd data",
		Long: `Stop every component still running (SIGTERM, then SIGKILL after a grace period), also
when the control plane is partly dead, and remove its state, kubeconfigs and etcd data (kept if it
was started with --keep-data). Logs stay in --controlplane-dir. A process whose pid now runs another program is
never signalled.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			begin := time.Now()
			if err := controlplane.Down(cmd.Context(), dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "control plane in %s down (%s)\n", dir, time.Since(begin).Round(10*time.Millisecond))
			return nil
		},
	}
	addControlPlaneDirFlag(cmd, &dir)
	return cmd
}

func newControlPlaneStatusCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each component's pid, ports, health and memory; exit 1 unless healthy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			r, err := controlplane.Status(ctx, dir)
			if err != nil {
				return err
			}
			printStatus(cmd.OutOrStdout(), r, time.Now())
			if !r.Healthy {
				return fmt.Errorf("control plane in %s is not up", r.Dir)
			}
			return nil
		},
	}
	addControlPlaneDirFlag(cmd, &dir)
	return cmd
}

func printStatus(w io.Writer, r *controlplane.StatusReport, now time.Time) {
	if !r.Recorded {
		fmt.Fprintf(w, "no control plane in %s\n", r.Dir)
		return
	}
	health := "healthy"
	if !r.Healthy {
		health = "NOT healthy (run `fakelet controlplane up` to replace it)"
	}
	fmt.Fprintf(w, "control plane in %s: %s\n", r.Dir, health)
	fmt.Fprintf(w, "started %s (%s ago)\n", r.StartedAt.Local().Format(time.DateTime), now.Sub(r.StartedAt).Round(time.Second))
	fmt.Fprintf(w, "server %s, kubeconfig %s\n", r.APIServerURL, r.Kubeconfig)
	switch {
	case r.UntilLastUser:
		fmt.Fprintf(w, "started by a run: stops when the last of its %d user(s) ends\n", r.Users)
	case r.Users > 0:
		fmt.Fprintf(w, "%d run(s) attached\n", r.Users)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tPORTS\tPROCESS\tHEALTH\tRSS")
	for _, c := range r.Components {
		rss := "-"
		if c.RSS > 0 {
			rss = fmt.Sprintf("%.0f MiB", float64(c.RSS)/(1<<20))
		}
		h := c.Health
		if h == "" {
			h = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", c.Name, c.PID, formatPorts(c.Ports), c.Process, h, rss)
	}
	tw.Flush()
}

// formatPorts prints ports sorted by role, so the output is the same every time.
func formatPorts(ports map[string]int) string {
	var parts []string
	for role, port := range ports {
		parts = append(parts, fmt.Sprintf("%s=%d", role, port))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
