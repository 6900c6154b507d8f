package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/deploy"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

func init() { subcommandFactories = append(subcommandFactories, newRBACCommand) }

func newRBACCommand() *cobra.Command {
	var prefix, identity string
	var nodes int
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the RBAC a fleet's credential needs, impersonation limited to the fleet's kubelets",
		Long: `Print deploy/rbac/fakelet.yaml for a fleet of --nodes nodes named --name-prefix-NNNNN: the
ServiceAccount fakelet/fakelet, what the fleet's own credential does, the deletion of those nodes'
Nodes and Leases only, and the impersonation of the group system:nodes and of the users
system:node:<name> of those nodes only, each listed by name. With --identity fleet, print
deploy/rbac/fleet-identity.yaml for them instead, to apply as well: what the kubelets send, and the
status patches and renewals of those nodes' Nodes and Leases only. Apply it with kubectl apply -f -
(the roles are named for their nodes, so those of two fleets apply side by side):
  fakelet rbac --name-prefix scale --nodes 5000 | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			write := deploy.RBAC
			switch identity {
			case string(fleet.IdentityNode):
			case string(fleet.IdentityFleet):
				write = deploy.FleetIdentityRBAC
			default:
				return fmt.Errorf("--identity %q: want node (deploy/rbac/fakelet.yaml) or fleet (deploy/rbac/fleet-identity.yaml)", identity)
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			if err := write(w, prefix, nodes); err != nil {
				return err
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&prefix, "name-prefix", fleetname.DefaultNamePrefix, "the fleet's --name-prefix")
	cmd.Flags().IntVar(&nodes, "nodes", 1000, "the fleet's --nodes (all shards together)")
	cmd.Flags().StringVar(&identity, "identity", string(fleet.IdentityNode), "the fleet's --identity: node for fakelet.yaml, fleet for the fleet-identity.yaml to apply beside it")
	return cmd
}
