package run

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/metrics"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/source"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/report"
	"fakelet.dev/fakelet/scenario"
)

// gracePeriod is the node lifecycle controller's grace period on tgt: the flag's if given, else the
// local control plane's, else the controller's default, which log says is assumed.
func gracePeriod(flag time.Duration, tgt *Target, log io.Writer) (time.Duration, error) {
	if flag != 0 {
		return flag, nil
	}
	if tgt.Local != nil {
		d, ok, err := tgt.Local.NodeMonitorGracePeriod()
		if err != nil || ok {
			return d, err
		}
		return falsealarm.DefaultGrace, nil
	}
	fmt.Fprintf(log, "false alarms: assuming the controller's default --node-monitor-grace-period, %v; give --node-monitor-grace-period if %s's is another\n",
		falsealarm.DefaultGrace, tgt.Config.Host)
	return falsealarm.DefaultGrace, nil
}

// runReport records a run and writes its report at the end.
type runReport struct {
	flags   ReportOptions
	session *measure.Session
	target  *Target
	profile string // the profile's name; empty for a run without one
	metrics *runMetrics
}

// startReport prepares the record of a run against tgt, saying on log what it assumes; the session reads the fleet's requests from
// its tally once the fleet is observed (Launch).
func startReport(rf ReportOptions, tgt *Target, m *runMetrics, log io.Writer) (*runReport, error) {
	if rf.ScrapeInterval <= 0 {
		return nil, fmt.Errorf("--scrape-interval must be positive, got %v", rf.ScrapeInterval)
	}
	grace, err := gracePeriod(rf.GracePeriod, tgt, log)
	if err != nil {
		return nil, err
	}
	sources, err := source.Target(tgt.Config, tgt.Local)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(tgt.Config))
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", tgt.Config.Host, err)
	}
	s := measure.New(measure.Options{Sources: sources, ScrapeInterval: rf.ScrapeInterval, Client: client, WatchLeases: rf.WatchLeases,
		OnReaction: reactionsInto(m), GracePeriod: grace, OnPodStartup: podStartupsInto(m)})
	return &runReport{flags: rf, session: s, target: tgt, metrics: m}, nil
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

// profileHooks returns the profile runner's callbacks (scenario.Config.OnPhase and OnApplied) that
// record the profile's phases and ops for the report, and names the report after the profile.
func (rr *runReport) profileHooks(plan *profiles.Plan, f *fleet.Fleet) (func(string, scenario.PhaseRecord), func(scenario.Applied)) {
	rr.profile = plan.Profile.Metadata.Name
	return rr.session.Hooks(plan, f)
}

// finish builds the report, writes it to its directory and prints its summary table to out.
func (rr *runReport) finish(out, log io.Writer, o Options, cfg fleet.Resolved) error {
	rr.session.Stop()
	profile := rr.profile
	rec := rr.session.Record(profile, Parameters(cfg, o.Images, rr.flags.ScrapeInterval), Versions(), rr.target.Record())
	r := report.Build(rec)
	workloadReactionsInto(rr.metrics, r)
	if m := rr.metrics; m != nil && m.Metrics != nil {
		for _, sum := range r.Reactions { // missing is known only once each phase ended
			for range sum.Missing {
				m.ReactionMissed(sum.Event, sum.Group)
			}
		}
	}
	dir, err := WriteReport(r, rr.flags.Dir, cmp.Or(profile, "run"), out, log)
	if err != nil {
		return err
	}
	rr.metrics.serveReport(dir, log)
	return nil
}

// WriteReport prints r's summary table to out and writes r to dir, by default reports/NAME-START,
// and returns the directory.
func WriteReport(r *report.Report, dir, name string, out, log io.Writer) (string, error) {
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

// Parameters are what a report says of the fleet cfg, each node reporting images container images,
// scraped every scrapeInterval.
func Parameters(r fleet.Resolved, images int, scrapeInterval time.Duration) record.Parameters {
	cfg := r.Config()
	hb := cfg.Heartbeat
	return record.Parameters{
		Nodes: cfg.Nodes, Mode: string(hb.Mode), LeaseDurationSeconds: hb.LeaseDurationSeconds,
		RenewInterval: hb.RenewInterval.String(), StatusUpdateFrequency: hb.StatusUpdateFrequency.String(),
		StatusReportFrequency: hb.StatusReportFrequency.String(), Identity: string(cfg.Identity), Footprint: string(cfg.Footprint),
		Connections: string(cfg.ConnectionMode), ConnectionIdentity: fleet.IdentityOf(cfg),
		Images: images, Zones: cfg.Zones, RegisterQPS: cfg.RegisterQPS,
		ScrapeInterval: scrapeInterval.String(), Args: os.Args,
	}
}

// Versions are this binary's and its Go's.
func Versions() record.Versions {
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
