package main

import "github.com/spf13/cobra"

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "fakelet",
		Short:         "Scale-test a Kubernetes control plane with thousands of fake kubelets",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(subcommands()...)
	return root
}

// subcommandFactories is filled by init functions in each command's own file, so that commands can be
// added without editing this one.
var subcommandFactories []func() *cobra.Command

func subcommands() []*cobra.Command {
	cmds := make([]*cobra.Command, 0, len(subcommandFactories))
	for _, f := range subcommandFactories {
		cmds = append(cmds, f())
	}
	return cmds
}
