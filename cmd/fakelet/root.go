package main

import (
	"flag"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "fakelet",
		Short:         "Scale-test a Kubernetes control plane with thousands of fake kubelets",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var clientLog bool
	root.PersistentFlags().BoolVar(&clientLog, "client-log", false, "show client-go's own log lines (retries, watch restarts); fakelet counts errors itself")
	root.PersistentPreRun = func(*cobra.Command, []string) {
		if !clientLog {
			// client-go logs every failed request of every fake kubelet: at thousands of nodes under
			// an overloaded apiserver that is a flood, and the summary counts them anyway.
			fs := flag.NewFlagSet("klog", flag.ContinueOnError)
			klog.InitFlags(fs)
			_ = fs.Set("logtostderr", "false")
			_ = fs.Set("stderrthreshold", "FATAL")
			klog.SetOutput(io.Discard)
		}
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
