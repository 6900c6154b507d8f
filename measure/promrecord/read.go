package promrecord

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"fakelet.dev/fakelet/deploy"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/record"
)

// Querier is the part of Prometheus's HTTP API that Read uses; v1.API is one.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, error)
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, error)
}

// Jobs are the Prometheus job names of fakelet and the control plane's components.
type Jobs struct {
	Fakelet, APIServer, Etcd, ControllerManager, Scheduler string
}

// DefaultJobs are the job names of deploy/prometheus's configurations (local and cluster).
var DefaultJobs = Jobs{
	Fakelet: deploy.JobFakelet, APIServer: deploy.JobAPIServer, Etcd: deploy.JobEtcd,
	ControllerManager: deploy.JobControllerManager, Scheduler: deploy.JobScheduler,
}

// Options configure Read.
type Options struct {
	// URL names the server in messages and in the report's Source.
	URL string
	// From and To bound the run.
	From, To time.Time
	// Step is the resolution of the load and node timelines; 0 means DefaultStep(From, To).
	Step time.Duration
	// Base, if set, is a report.json of the same run (one shard's will do) whose phases, profile,
	// parameters and target the record takes; BaseName is its path, for the report's Source. Without
	// it, phases come from fakelet_profile_info.
	Base     *record.Record
	BaseName string
	// Jobs default to DefaultJobs.
	Jobs Jobs
}

// maxTimelinePoints bounds the number of steps: each costs about 20 queries.
const maxTimelinePoints = 100

// minStep is the finest default step: twice deploy/prometheus's scrape interval (15 s), so that a
// step holds two samples of every series, as increase() needs.
const minStep = 30 * time.Second

// DefaultStep is the step of a window: 30 s, or longer so that there are at most 100 steps.
func DefaultStep(from, to time.Time) time.Duration {
	return max(minStep, (to.Sub(from) / maxTimelinePoints).Round(time.Second))
}

// concurrency is how many queries are in flight at once.
const concurrency = 4

// Read queries the server for the run between opts.From and opts.To and returns its record.
func Read(ctx context.Context, q Querier, opts Options) (record.Record, error) {
	if !opts.To.After(opts.From) {
		return record.Record{}, fmt.Errorf("the window ends (%s) before it begins (%s)", opts.To.UTC().Format(time.RFC3339), opts.From.UTC().Format(time.RFC3339))
	}
	if opts.Step <= 0 {
		opts.Step = DefaultStep(opts.From, opts.To)
	}
	if opts.Jobs == (Jobs{}) {
		opts.Jobs = DefaultJobs
	}
	r := &reader{q: q, opts: opts}
	if _, _, err := q.Query(ctx, "vector(1)", opts.To); err != nil {
		return record.Record{}, fmt.Errorf("Prometheus at %s does not answer: %w", opts.URL, err)
	}
	rec := record.Record{Start: opts.From, End: opts.To}
	src := &record.Source{Prometheus: opts.URL, From: opts.From, To: opts.To, Step: opts.Step.String(), Notes: slices.Clone(notes)}
	if b := opts.Base; b != nil {
		rec.Profile, rec.Parameters, rec.Target, rec.Phases = b.Profile, b.Parameters, b.Target, clip(b.Phases, opts.From, opts.To)
		rec.Parameters.Args = nil
		src.Phases = opts.BaseName
	} else {
		profile, phases, err := r.phases(ctx)
		if err != nil {
			return record.Record{}, err
		}
		rec.Profile, rec.Phases, src.Phases = profile, phases, "fakelet_profile_info"
		if len(phases) == 0 {
			src.Phases = "none"
		}
		rec.Target.Description = "the cluster that Prometheus at " + opts.URL + " scraped"
		mode, err := r.mode(ctx)
		if err != nil {
			return record.Record{}, err
		}
		rec.Parameters.Mode = mode
	}
	rec.Phases = record.RunPhases(rec.Phases, opts.From, opts.To)
	l, err := r.load(ctx, rec.Phases)
	if err != nil {
		return record.Record{}, err
	}
	if len(l.Run.Requests) == 0 && len(l.Run.Fleet) == 0 {
		return record.Record{}, fmt.Errorf("Prometheus at %s has no requests of job %s or %s between %s and %s: is it scraping them (docs/metrics.md), and is the window the run's?",
			opts.URL, opts.Jobs.APIServer, opts.Jobs.Fakelet, opts.From.UTC().Format(time.RFC3339), opts.To.UTC().Format(time.RFC3339))
	}
	rec.Load = l
	if src.Actions, src.Reactions, src.Missed, err = r.reactions(ctx, rec.Phases); err != nil {
		return record.Record{}, err
	}
	if rec.Nodes.Timeline, err = r.nodeTimeline(ctx); err != nil {
		return record.Record{}, err
	}
	if n, err := r.fleetNodes(ctx); err != nil {
		return record.Record{}, err
	} else if n > 0 {
		rec.Parameters.Nodes = n
	}
	if rec.Versions.Server, err = r.serverVersion(ctx); err != nil {
		return record.Record{}, err
	}
	rec.Parameters.ScrapeInterval = ""
	rec.Source = src
	return rec, nil
}

// notes are what a report read from Prometheus leaves out or estimates.
var notes = []string{
	"Built from Prometheus: counts are increase() over each window, summed over every target of each job (all of the fleet's shards); Prometheus extrapolates them to the window's edges, and a series that appeared within the window (a process started after --from) counts from its first sample, not from zero.",
	"Reactions per node are not in this report: which node reacted to which action when, and which never did, is known only to the fleet's processes (their report.json files; fakelet report merge). Prometheus holds their totals, shown under reactions from Prometheus: fakelet_actions_total, fakelet_reaction_latency_seconds (quantiles estimated from its buckets) and fakelet_reactions_missed_total (over the whole run).",
	"Node states are fakelet_nodes: not Ready counts False and Unknown together (under notReady); transitions and Lease renewals seen are counted by the fleet's watches, not here (0).",
}

type reader struct {
	q    Querier
	opts Options
}

// job is the Prometheus job of a load component.
func (r *reader) job(component string) string {
	switch component {
	case load.APIServer:
		return r.opts.Jobs.APIServer
	case load.Etcd:
		return r.opts.Jobs.Etcd
	case load.ControllerManager:
		return r.opts.Jobs.ControllerManager
	case load.Scheduler:
		return r.opts.Jobs.Scheduler
	}
	return r.opts.Jobs.Fakelet
}

func (r *reader) instant(ctx context.Context, expr string, at time.Time) (model.Vector, error) {
	v, _, err := r.q.Query(ctx, expr, at)
	if err != nil {
		return nil, fmt.Errorf("query Prometheus at %s: %s at %s: %w", r.opts.URL, expr, at.UTC().Format(time.RFC3339), err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query Prometheus at %s: %s: a %s, not an instant vector", r.opts.URL, expr, v.Type())
	}
	return vec, nil
}

func (r *reader) series(ctx context.Context, expr string, step time.Duration) (model.Matrix, error) {
	v, _, err := r.q.QueryRange(ctx, expr, v1.Range{Start: r.opts.From, End: r.opts.To, Step: step})
	if err != nil {
		return nil, fmt.Errorf("query Prometheus at %s: %s from %s to %s: %w", r.opts.URL, expr,
			r.opts.From.UTC().Format(time.RFC3339), r.opts.To.UTC().Format(time.RFC3339), err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("query Prometheus at %s: %s: a %s, not a range vector", r.opts.URL, expr, v.Type())
	}
	return m, nil
}

// mode is the fleet's heartbeat mode as its heartbeats tell: lease if it renewed Leases, status if it
// only patched node statuses, "" if neither.
func (r *reader) mode(ctx context.Context) (string, error) {
	vec, err := r.instant(ctx, sumBy([]string{"kind"}, fmt.Sprintf("increase(fakelet_heartbeats_total{job=%q}[%dms])",
		r.opts.Jobs.Fakelet, r.opts.To.Sub(r.opts.From).Milliseconds())), r.opts.To)
	if err != nil {
		return "", err
	}
	mode := ""
	for _, s := range vec {
		switch {
		case s.Value <= 0:
		case s.Metric["kind"] == "lease":
			return "lease", nil
		case s.Metric["kind"] == "status":
			mode = "status"
		}
	}
	return mode, nil
}

// serverVersion is the apiserver's gitVersion from kubernetes_build_info, or "".
func (r *reader) serverVersion(ctx context.Context) (string, error) {
	vec, err := r.instant(ctx, fmt.Sprintf("kubernetes_build_info{job=%q}", r.opts.Jobs.APIServer), r.opts.To)
	if err != nil || len(vec) == 0 {
		return "", err
	}
	return string(vec[0].Metric["git_version"]), nil
}
