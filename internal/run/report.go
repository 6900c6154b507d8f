package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/metrics"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/measure/source"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/report"
	"fakelet.dev/fakelet/scenario"
)

type reportFlags struct {
	dir            string
	scrapeInterval time.Duration
	watchLeases    bool
	// gracePeriod is --node-monitor-grace-period: 0 reads it from the local control plane, or takes
	// the controller manager's default on another cluster.
	gracePeriod time.Duration
}

func addReportFlags(f *pflag.FlagSet, rf *reportFlags) {
	f.StringVar(&rf.dir, "out", "", "write report.json, report.html, perfdata.json and summary.txt here (default reports/<profile>-<timestamp>/)")
	aliasFlag(f, "report-dir", "out")
	f.DurationVar(&rf.scrapeInterval, "scrape-interval", scrape.DefaultInterval, "scrape the control plane's /metrics this often, besides at every phase boundary")
	f.BoolVar(&rf.watchLeases, "watch-leases", true, "watch the fleet's Leases to count renewals and see deleted ones recreated (one more watcher of every Lease write)")
	addGracePeriodFlag(f, &rf.gracePeriod)
}

// addGracePeriodFlag adds --node-monitor-grace-period, which the false alarms' attribution needs.
func addGracePeriodFlag(f *pflag.FlagSet, d *time.Duration) {
	f.DurationVar(d, "node-monitor-grace-period", 0, "the target's kube-controller-manager --node-monitor-grace-period, "+
		"the window before a false alarm whose requests say what caused it (default: the local control plane's own, else the controller's default, "+
		falsealarm.DefaultGrace.String()+")")
}

// gracePeriod is the node lifecycle controller's grace period on tgt: the flag's if given, else the
// local control plane's, else the controller's default, which log says is assumed.
func gracePeriod(flag time.Duration, tgt *target, log io.Writer) (time.Duration, error) {
	if flag != 0 {
		return flag, nil
	}
	if tgt.local != nil {
		d, ok, err := tgt.local.NodeMonitorGracePeriod()
		if err != nil || ok {
			return d, err
		}
		return falsealarm.DefaultGrace, nil
	}
	fmt.Fprintf(log, "false alarms: assuming the controller's default --node-monitor-grace-period, %v; give --node-monitor-grace-period if %s's is another\n",
		falsealarm.DefaultGrace, tgt.config.Host)
	return falsealarm.DefaultGrace, nil
}

// runReport records a run and writes its report at the end.
type runReport struct {
	flags   reportFlags
	session *measure.Session
	target  *target
	nodes   string // the fleet's node name prefix, with its dash
	profile string // the profile's name; empty for a run without one
	metrics *runMetrics
}

// startReport prepares the record of a run against tgt, saying on log what it assumes; the session reads the fleet's requests from
// its tally once the fleet is observed (runReport.begin).
func startReport(rf reportFlags, cfg *fleet.Config, tgt *target, m *runMetrics, log io.Writer) (*runReport, error) {
	if rf.scrapeInterval <= 0 {
		return nil, fmt.Errorf("--scrape-interval must be positive, got %v", rf.scrapeInterval)
	}
	grace, err := gracePeriod(rf.gracePeriod, tgt, log)
	if err != nil {
		return nil, err
	}
	sources, err := source.Target(tgt.config, tgt.local)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(tgt.config))
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", tgt.config.Host, err)
	}
	s := measure.New(measure.Options{Sources: sources, ScrapeInterval: rf.scrapeInterval, Client: client, WatchLeases: rf.watchLeases,
		OnReaction: reactionsInto(m), GracePeriod: grace, OnPodStartup: podStartupsInto(m)})
	return &runReport{flags: rf, session: s, target: tgt, nodes: cfg.WithDefaults().NamePrefix + "-", metrics: m}, nil
}

// reactionsInto feeds live reactions to the run's reaction latency histograms
// (fakelet_reaction_latency_seconds).
func reactionsInto(m *runMetrics) func(event, group string, fromAction, fromLastRenewal time.Duration) {
	if m == nil || m.Metrics == nil {
		return nil
	}
	return func(event, group string, fromAction, fromLastRenewal time.Duration) {
		m.ObserveReaction(event, group, metrics.FromAction, fromAction)
		if fromLastRenewal >= 0 {
			m.ObserveReaction(event, group, metrics.FromLastRenewal, fromLastRenewal)
		}
	}
}

// begin starts recording fleet f; the record ends by itself when ctx does, before the fleet deletes
// its nodes.
func (rr *runReport) begin(ctx context.Context, f *fleet.Fleet) error {
	rr.session.Observe(f)
	if err := rr.session.Start(context.WithoutCancel(ctx), func(name string) bool { return strings.HasPrefix(name, rr.nodes) }); err != nil {
		return err
	}
	go func() { <-ctx.Done(); rr.session.Stop() }()
	return nil
}

// profileHooks returns the profile runner's callbacks (scenario.Config.OnPhase and OnApplied) that
// record the profile's phases and ops for the report, and names the report after the profile.
func (rr *runReport) profileHooks(plan *profiles.Plan, f *fleet.Fleet) (func(string, scenario.PhaseRecord), func(scenario.Applied)) {
	rr.profile = plan.Profile.Metadata.Name
	return rr.session.Hooks(plan, f)
}

// finish builds the report, writes it to --out and prints its summary table to out.
func (rr *runReport) finish(out, log io.Writer, rf runFlags, cfg fleet.Config) error {
	rr.session.Stop()
	profile := rr.profile
	rec := rr.session.Record(profile, parameters(rf, cfg), versions(), record.Target{
		Server: rr.target.config.Host, Description: rr.target.description, Local: rr.target.local != nil,
	})
	r := report.Build(rec)
	workloadReactionsInto(rr.metrics, r)
	if m := rr.metrics; m != nil && m.Metrics != nil {
		for _, sum := range r.Reactions { // missing is known only once each phase ended
			for range sum.Missing {
				m.ReactionMissed(sum.Event, sum.Group)
			}
		}
	}
	dir, err := writeReport(r, rr.flags.dir, cmp.Or(profile, "run"), out, log)
	if err != nil {
		return err
	}
	rr.metrics.serveReport(dir, log)
	return nil
}

// writeReport prints r's summary table to out and writes r to dir, by default reports/NAME-START,
// and returns the directory.
func writeReport(r *report.Report, dir, name string, out, log io.Writer) (string, error) {
	if dir == "" {
		dir = filepath.Join("reports", name+"-"+r.Start.Format("20060102-150405"))
	}
	fmt.Fprintln(out)
	if err := r.WriteText(out); err != nil {
		return "", err
	}
	if err := r.WriteDir(dir); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "report: %s\n", filepath.Join(dir, report.HTMLFile))
	return dir, nil
}

func parameters(rf runFlags, cfg fleet.Config) record.Parameters {
	hb := cfg.Heartbeat.WithDefaults()
	return record.Parameters{
		Nodes: cfg.Nodes, Mode: string(hb.Mode), LeaseDurationSeconds: hb.LeaseDurationSeconds,
		RenewInterval: hb.RenewInterval.String(), StatusUpdateFrequency: hb.StatusUpdateFrequency.String(),
		StatusReportFrequency: hb.StatusReportFrequency.String(), Identity: string(cfg.Identity), Footprint: string(cfg.Footprint),
		Connections: string(cfg.ConnectionMode), ConnectionIdentity: fleet.IdentityOf(cfg),
		Images: rf.images, Zones: cfg.Zones, RegisterQPS: cfg.RegisterQPS,
		ScrapeInterval: rf.report.scrapeInterval.String(), Args: os.Args,
	}
}

func versions() record.Versions {
	v := record.Versions{Fakelet: "(devel)", Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Fakelet = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Fakelet += " " + s.Value
			}
		}
	}
	return v
}
