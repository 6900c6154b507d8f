package main

import (
	"bufio"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/deploy"
	"fakelet.dev/fakelet/fleet"
)

func init() { subcommandFactories = append(subcommandFactories, newRBACCommand) }

func newRBACCommand() *cobra.Command {
	var prefix string
	var nodes int
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the RBAC a fleet's credential needs, impersonation limited to the fleet's kubelets",
		Long: `Print deploy/rbac/fakelet.yaml for a fleet of --nodes nodes named --name-prefix-NNNNN: the
ServiceAccount fakelet/fakelet, what the fleet's own credential does, and the impersonation of the
group system:nodes and of the users system:node:<name> of those nodes only, each listed by name.
Apply it with kubectl apply -f - (the kubelets' ClusterRoles are named for their nodes, so those of
two fleets apply side by side):
  fakelet rbac --name-prefix scale --nodes 5000 | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := bufio.NewWriter(cmd.OutOrStdout())
			if err := deploy.RBAC(w, prefix, nodes); err != nil {
				return err
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&prefix, "name-prefix", fleet.DefaultNamePrefix, "the fleet's --name-prefix")
	cmd.Flags().IntVar(&nodes, "nodes", 1000, "the fleet's --nodes (all shards together)")
	return cmd
}
