package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

func init() { subcommandFactories = append(subcommandFactories, newCleanupCommand) }

type cleanupFlags struct {
	target targetFlags
	fleet  string
	qps    float64
	force  bool
	dryRun bool
}

func newCleanupCommand() *cobra.Command {
	var cf cleanupFlags
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete a fleet's Nodes, Leases, pods and workloads' namespaces left in a cluster (by --keep or a killed run)",
		Long: `Delete the Nodes labelled ` + fleetname.Label + `=FLEET, the Leases in kube-node-lease that
those Nodes own and the pods in namespace ` + fleetname.PodNamespace + ` labelled ` + fleetname.Label + `=FLEET and bound
to those Nodes (if the credential may list pods), and print each one deleted. Nothing else is touched: a Node without the label, or
with another fleet's, stays whatever its name, and so does a Lease none of those Nodes owns.

A run is alive while the server shows it heartbeating: unless a run released its claim on the
fleet at its end, cleanup first watches the Nodes' Leases and Ready heartbeats for a lease duration
(40 s) on its own clock, and if one changes, nothing is deleted unless --force. Each object is read
again just before its delete and deleted only if it still carries the run and heartbeat seen, at
the version read, so a run that adopts a Node meanwhile keeps it. Deletions go
--cleanup-qps a second, node by node (its pods, its Lease, the Node), a failure does not stop the
others, and a progress line is printed every 5 seconds; at the end the summary says what is left.

The cluster is chosen as for fakelet run, except that with neither --kubeconfig nor --context the
local control plane is only cleaned if it is up; it is never started.

The namespaces of workloads that crashed or killed runs of the fleet left (labelled
` + fleetname.Label + `=FLEET and ` + fleet.RunLabel + `) are deleted too, with all in them (if the credential may
list namespaces), and ` + fleetname.PodNamespace + ` if a run of the fleet created it and no pod is left in it; a
namespace without those labels stays, and while a live run holds the fleet's Nodes, so does its
namespace (unless --force).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkName("--fleet", cf.fleet, fleetname.CheckFleet); err != nil {
				return err
			}
			if err := fleet.CheckCleanupQPS(cf.qps); err != nil {
				return fmt.Errorf("--cleanup-qps %w", err)
			}
			return cleanup(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cf.fleet, "fleet", fleetname.DefaultFleet, "the fleet whose Nodes and Leases to delete (the value of its "+fleetname.Label+" label)")
	f.StringVar(&cf.target.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to clean (default: the local control plane)")
	f.StringVar(&cf.target.context, "context", "", "kubeconfig context of the cluster to clean (default: the local control plane)")
	f.StringVar(&cf.target.controlPlaneDir, "controlplane-dir", controlplane.DefaultDir, "directory of the local control plane")
	addCleanupQPSFlag(f, &cf.qps)
	f.BoolVar(&cf.force, "force", false, "delete the fleet's Nodes even if a live run holds them, without watching their heartbeats first")
	f.BoolVar(&cf.dryRun, "dry-run", false, "print what would be deleted, and delete nothing")
	addInsecureFlag(f, &cf.target)
	return cmd
}

// addCleanupQPSFlag is --cleanup-qps, for fakelet run's end-of-run cleanup and for fakelet cleanup.
func addCleanupQPSFlag(f *pflag.FlagSet, qps *float64) {
	f.Float64Var(qps, "cleanup-qps", fleet.DefaultCleanupQPS, "deletions sent per second when cleaning up (10,000 nodes with their Leases: 200 s at 100)")
}

func cleanup(ctx context.Context, out, log io.Writer, cf cleanupFlags) error {
	var tgt *target
	if cf.target.kubeconfig != "" || cf.target.context != "" {
		var err error
		if tgt, err = kubeconfigTarget(cf.target); err != nil {
			return err
		}
	} else {
		cp, err := controlplane.Attach(cf.target.controlPlaneDir)
		if err != nil {
			fmt.Fprintf(log, "no local control plane is up in %s, so nothing to clean there (another cluster: --kubeconfig or --context)\n", cf.target.controlPlaneDir)
			return nil
		}
		tgt = &target{Config: cp.AdminConfig(), Description: fmt.Sprintf("%s (local control plane in %s)", cp.APIServerURL, cp.Dir)}
	}
	fmt.Fprintf(log, "target: %s\n", tgt.Description)
	cfg := *tgt.Config
	cfg.UserAgent = "fakelet"
	cfg.QPS = -1 // the cleanup paces itself at --cleanup-qps: client-go's default of 5 a second would take an hour for 10,000 nodes
	client, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return fmt.Errorf("build the client: %w", err)
	}
	if err := access.Check(ctx, client, fleet.CleanupPermissions()); err != nil {
		return err
	}
	deleted, err := fleet.DeleteFleetAndNamespaces(ctx, client, fleet.CleanupOptions{
		Fleet: cf.fleet, QPS: cf.qps, Force: cf.force, DryRun: cf.dryRun, Log: log,
	})
	var live *fleet.LiveRunError
	if errors.As(err, &live) {
		return fmt.Errorf("%w; nothing was deleted: stop that run and try again, or use --force", live)
	}
	verb, done := "deleted", "deleted"
	if cf.dryRun {
		verb, done = "would delete", "would delete"
	}
	for _, n := range deleted.Nodes {
		fmt.Fprintf(out, "%s node/%s\n", verb, n)
	}
	for _, l := range deleted.Leases {
		fmt.Fprintf(out, "%s lease/%s -n %s\n", verb, l, agent.LeaseNamespace)
	}
	for _, p := range deleted.Pods {
		fmt.Fprintf(out, "%s pod/%s -n %s\n", verb, p, fleetname.PodNamespace)
	}
	for _, ns := range deleted.Namespaces {
		fmt.Fprintf(out, "%s namespace/%s\n", verb, ns)
	}
	fmt.Fprintf(out, "fleet %s: %s %d nodes and %d leases\n", cf.fleet, done, len(deleted.Nodes), len(deleted.Leases))
	if len(deleted.Pods) > 0 {
		fmt.Fprintf(out, "fleet %s: %s %d pods\n", cf.fleet, done, len(deleted.Pods))
	}
	if len(deleted.Namespaces) > 0 {
		fmt.Fprintf(out, "fleet %s: %s %d namespaces of workloads (and all in them)\n", cf.fleet, done, len(deleted.Namespaces))
	}
	var left *fleet.LeftError
	if errors.As(err, &left) {
		return fmt.Errorf("%w; remove what is left with: %s", left, cleanupCommand(cf.fleet, cf.target))
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}

// cleanupCommand is the fakelet cleanup command line that removes what fleet left in the cluster of tf.
func cleanupCommand(fleetName string, tf targetFlags) string {
	args := []string{"fakelet", "cleanup", "--fleet", fleetName}
	switch {
	case tf.inCluster:
		return "a fakelet cleanup --fleet " + shellQuote(fleetName) + " in a pod of the cluster with fakelet's ServiceAccount, or with a kubeconfig for it"
	case tf.kubeconfig != "" || tf.context != "":
		if tf.kubeconfig != "" {
			args = append(args, "--kubeconfig", tf.kubeconfig)
		}
		if tf.context != "" {
			args = append(args, "--context", tf.context)
		}
		if tf.insecure {
			args = append(args, "--insecure-skip-tls-verify")
		}
	case tf.controlPlaneDir != controlplane.DefaultDir:
		args = append(args, "--controlplane-dir", tf.controlPlaneDir)
	}
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell if it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
