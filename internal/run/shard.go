package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/lockstep"
	"fakelet.dev/fakelet/scenario"
)

// coordinate agrees with the other shards on the start, with Auto (else it does nothing): the start
// Lease's time becomes this shard's StartAt. The caller releases the Start at the end of the run.
func (so *ShardOptions) coordinate(ctx context.Context, restConfig *rest.Config, fleetName string, log io.Writer) (*lockstep.Start, error) {
	if !so.Auto {
		return nil, nil
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	return so.Join(ctx, client, clock.RealClock{}, fleetName, log)
}

// Join is coordinate on a given client and clock, for fleet.
func (so *ShardOptions) Join(ctx context.Context, client kubernetes.Interface, clk clock.PassiveClock, fleetName string, log io.Writer) (*lockstep.Start, error) {
	holder, err := so.Holder()
	if err != nil {
		return nil, fmt.Errorf("--start-at auto: %w", err)
	}
	start, err := lockstep.Join(ctx, lockstep.Options{
		Client: client, Namespace: so.Namespace, Fleet: fleetName, Holder: holder,
		Run: so.Run, Delay: so.Delay, Duration: so.Duration, Clock: clk, Log: log,
	})
	if err != nil {
		return nil, err
	}
	so.StartAt = start.At
	return start, nil
}

// Holder names this shard's process in the objects it creates for the shards: its host and shard.
func (so *ShardOptions) Holder() (string, error) {
	host := so.Hostname
	if host == "" {
		var err error
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("read the hostname, which names this shard in the Leases of the shards: %w", err)
		}
	}
	return fmt.Sprintf("%s shard %v", host, so.Shard), nil
}

// scenarioConfig is what the options decide of a profile run: how long to wait for Ready nodes,
// which shard's ops to apply and when the first phase begins.
func (r *Run) scenarioConfig() scenario.Config {
	return scenario.Config{ReadyTimeout: r.o.ReadyTimeout, Shard: r.o.Shard.Shard, StartAt: r.o.Shard.StartAt}
}

// lockstepLine says which nodes of the profile's fleet this shard runs and when its phases begin;
// empty for a whole fleet without a start time.
func lockstepLine(cfg scenario.Config, f *fleet.Fleet) string {
	var line string
	if cfg.Shard.Sharded() {
		fc := f.Config()
		line = fmt.Sprintf("shard %v: nodes %s..%s of the profile's %d; ops on the other shards' nodes are theirs",
			cfg.Shard, fleetname.NodeName(fc.NamePrefix, fc.FirstIndex), fleetname.NodeName(fc.NamePrefix, fc.FirstIndex+fc.Nodes-1), cfg.Plan.Nodes)
	}
	if !cfg.StartAt.IsZero() {
		if line != "" {
			line += "; "
		}
		line += fmt.Sprintf("the first phase begins at --start-at %s (in %v), once this shard's nodes are Ready",
			cfg.StartAt.Format(time.RFC3339), time.Until(cfg.StartAt).Round(time.Second))
	}
	return line
}
