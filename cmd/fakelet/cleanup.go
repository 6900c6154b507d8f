package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
)

func init() { subcommandFactories = append(subcommandFactories, newCleanupCommand) }

type cleanupFlags struct {
	target targetFlags
	fleet  string
}

func newCleanupCommand() *cobra.Command {
	var cf cleanupFlags
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete a fleet's Nodes, Leases and pods left in a cluster (by --keep or a killed run)",
		Long: `Delete the Nodes labelled ` + agent.FleetLabel + `=FLEET, the Leases in kube-node-lease that
those Nodes own and the pods in namespace ` + fleet.PodNamespace + ` labelled ` + agent.FleetLabel + `=FLEET and bound
to those Nodes (if the credential may list pods), and print each one deleted. Nothing else is touched: a Node without the label, or
with another fleet's, stays whatever its name. The cluster is chosen as for fakelet run, except that
with neither --kubeconfig nor --context the local control plane is only cleaned if it is up; it is
never started.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkName("--fleet", fleet.Config{Fleet: cf.fleet}); err != nil {
				return err
			}
			return cleanup(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cf.fleet, "fleet", fleet.DefaultFleet, "the fleet whose Nodes and Leases to delete (the value of its "+agent.FleetLabel+" label)")
	f.StringVar(&cf.target.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to clean (default: the local control plane)")
	f.StringVar(&cf.target.context, "context", "", "kubeconfig context of the cluster to clean (default: the local control plane)")
	f.StringVar(&cf.target.controlPlaneDir, "controlplane-dir", controlplane.DefaultDir, "directory of the local control plane")
	addInsecureFlag(f, &cf.target)
	return cmd
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
		tgt = &target{config: cp.AdminConfig(), description: fmt.Sprintf("%s (local control plane in %s)", cp.APIServerURL, cp.Dir)}
	}
	fmt.Fprintf(log, "target: %s\n", tgt.description)
	cfg := *tgt.config
	cfg.UserAgent = "fakelet"
	client, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return fmt.Errorf("build the client: %w", err)
	}
	if err := fleet.CheckPermissions(ctx, client, fleet.CleanupPermissions()); err != nil {
		return err
	}
	deleted, err := fleet.DeleteFleet(ctx, client, cf.fleet, nil)
	for _, n := range deleted.Nodes {
		fmt.Fprintf(out, "deleted node/%s\n", n)
	}
	for _, l := range deleted.Leases {
		fmt.Fprintf(out, "deleted lease/%s -n %s\n", l, agent.LeaseNamespace)
	}
	for _, p := range deleted.Pods {
		fmt.Fprintf(out, "deleted pod/%s -n %s\n", p, fleet.PodNamespace)
	}
	fmt.Fprintf(out, "fleet %s: deleted %d nodes and %d leases\n", cf.fleet, len(deleted.Nodes), len(deleted.Leases))
	if len(deleted.Pods) > 0 {
		fmt.Fprintf(out, "fleet %s: deleted %d pods\n", cf.fleet, len(deleted.Pods))
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}
