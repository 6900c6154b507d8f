// Package run is one run of a fleet against a control plane, as `fakelet run` and `fakelet capacity`
// have it: its metrics server, its target, the start the shards agree on, the measurement session,
// the fleet, the profile's play, the summary and the report, and the release of all of it. The
// commands turn their flags into Options; a run's stages are New (set up), then Play (the fleet and
// its profile until the run ends) and Finish (the summary, the report, the cleanup's outcome), or
// Capacity (the fleet grown step by step until a service level breaks). Launch is the one start of
// a fleet, with its preflight and its session's watches, which the stages use and fakelet compare
// and bench's kubemark reference use for fleets of their own.
package run

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/lockstep"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/profiles"
)

// Options are everything a run needs, decided before it touches a cluster.
type Options struct {
	// Fleet is the fleet to run, resolved (fleet.Config.Resolve); Plan its profile resolved for it,
	// nil without one.
	Fleet fleet.Resolved
	Plan  *profiles.Plan
	// Target resolves the cluster the run talks to; New calls it once its metrics are served.
	Target func(context.Context) (*Target, error)
	// Metrics is where the run serves its metrics; Report how it is measured and where its report
	// goes; Shard which shard of the fleet it is and how it agrees on a start with the others.
	Metrics MetricsOptions
	Report  ReportOptions
	Shard   ShardOptions
	// ReadyTimeout is how long the profile waits for every node to be Ready (0: its default).
	ReadyTimeout time.Duration
	// Duration ends the run (0: a signal or the profile's end does).
	Duration time.Duration
	// Images is the container images each node reports, as the command was given it, for the
	// report's parameters.
	Images int
	// GOGC is what the command set the garbage collector to for its fleet (SizeGC), as the run's
	// first line says it, beside GOMAXPROCS (SizeProcs).
	GOGC int
	// CleanupCommand is the command that removes what a failed cleanup left.
	CleanupCommand string
	// Out receives the summary and the report's table, Log the run's progress.
	Out, Log io.Writer
}

// MetricsOptions are where a run serves its metrics: Addr (empty serves nothing), with Go's profiles
// if Pprof.
type MetricsOptions struct {
	Addr  string
	Pprof bool
}

// ReportOptions are how a run is measured and where its report goes.
type ReportOptions struct {
	// Dir receives the report (default reports/<profile>-<timestamp>/).
	Dir            string
	ScrapeInterval time.Duration
	WatchLeases    bool
	// GracePeriod is the target's --node-monitor-grace-period: 0 reads it from the local control
	// plane, or takes the controller manager's default on another cluster.
	GracePeriod time.Duration
}

// ShardOptions are a shard's: which slice of the fleet it runs and how it agrees on a start.
type ShardOptions struct {
	Shard fleetname.Shard
	// StartAt is when the profile's first phase begins; with Auto it comes from the start Lease,
	// which New joins in Namespace, set Delay ahead by the first shard, for Run (what every shard
	// must share), expiring Duration after the start.
	StartAt   time.Time
	Auto      bool
	Namespace string
	Delay     time.Duration
	Run       lockstep.Run
	Duration  time.Duration
	// Hostname names the pod for the shard's Leases; empty reads the machine's.
	Hostname string
}

// Target is the cluster a run talks to, and how to let go of it afterwards.
type Target struct {
	Config      *rest.Config
	Description string
	Local       *controlplane.ControlPlane // nil for a cluster given by --kubeconfig or --context
	Release     func(context.Context) error
	// Warning is printed before the run: the cluster is reached over plain HTTP.
	Warning string
}

// ReleaseOrSay releases the target, even after ctx has ended, and writes to log if that fails.
func (t *Target) ReleaseOrSay(ctx context.Context, log io.Writer) {
	if err := t.Release(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintln(log, "stop the local control plane:", err)
	}
}

// Record is what a report says of the target.
func (t *Target) Record() record.Target {
	return record.Target{Server: t.Config.Host, Description: t.Description, Local: t.Local != nil}
}
