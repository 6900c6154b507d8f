package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/internal/bench"
)

// podsFlags are fakelet bench's flags for the pods it measures each fleet with, besides
// --pods-per-node, which a reference run shares (referenceFlags).
type podsFlags struct {
	timeout               time.Duration
	controllerManagerArgs []string
	schedulerArgs         []string
}

func (p *podsFlags) add(f *pflag.FlagSet) {
	f.DurationVar(&p.timeout, "pods-timeout", bench.DefaultPodsTimeout, "with --pods-per-node: give up waiting for every pod to be Running (the window with them is measured all the same)")
	f.StringArrayVar(&p.controllerManagerArgs, "controller-manager-arg", nil, "extra kube-controller-manager flag (repeatable), such as --controller-manager-arg=--kube-api-qps=100, which bounds how fast the ReplicaSets create pods")
	f.StringArrayVar(&p.schedulerArgs, "scheduler-arg", nil, "extra kube-scheduler flag (repeatable), such as --scheduler-arg=--kube-api-qps=200")
}

// apply checks the pods' flags of a size bench and sets them in o, perNode the --pods-per-node.
func (p *podsFlags) apply(cmd *cobra.Command, perNode int, o *bench.Options, peer bool) error {
	o.ControllerManagerArgs, o.SchedulerArgs = p.controllerManagerArgs, p.schedulerArgs
	if perNode == 0 {
		if cmd.Flags().Changed("pods-timeout") {
			return fmt.Errorf("--pods-timeout needs --pods-per-node")
		}
		return nil
	}
	if err := bench.ValidatePodsPerNode(perNode); err != nil {
		return fmt.Errorf("--pods-per-node: %w", err)
	}
	if p.timeout <= 0 {
		return fmt.Errorf("--pods-timeout must be positive, got %v", p.timeout)
	}
	if peer {
		return fmt.Errorf("--pods-per-node and --peer are two benches: give one")
	}
	o.PodsPerNode, o.PodsTimeout = perNode, p.timeout
	return nil
}

// how is the flags of the pods, for the line that says how a table was measured.
func (p *podsFlags) how(o bench.Options) string {
	var s []string
	if o.PodsPerNode > 0 {
		s = append(s, fmt.Sprintf("--pods-per-node %d", o.PodsPerNode))
	}
	for _, a := range o.ControllerManagerArgs {
		s = append(s, "--controller-manager-arg="+a)
	}
	for _, a := range o.SchedulerArgs {
		s = append(s, "--scheduler-arg="+a)
	}
	return strings.Join(s, " ")
}
