package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/spf13/cobra"

	"fakelet.dev/fakelet/internal/run"
	"fakelet.dev/fakelet/measure/promrecord"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/report"
)

// promFlags are fakelet report's flags for a report from Prometheus.
type promFlags struct {
	url, from, to, phasesFrom, dir string
	step                           time.Duration
}

func (p *promFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&p.url, "prometheus", "", "build the report from this Prometheus server's series (http://HOST:PORT) instead of a report.json")
	f.StringVar(&p.from, "from", "", "with --prometheus: the run's start, RFC 3339 or Unix seconds (default: the start of --phases-from's report)")
	f.StringVar(&p.to, "to", "", "with --prometheus: the run's end, RFC 3339 or Unix seconds (default: the end of --phases-from's report)")
	f.DurationVar(&p.step, "step", 0, "with --prometheus: resolution of the timelines, at least twice Prometheus's scrape interval (default 30s, longer to keep 100 steps)")
	f.StringVar(&p.phasesFrom, "phases-from", "", "with --prometheus: take the phases, profile and parameters from this report.json of the run (one shard's will do) instead of fakelet_profile_info")
	f.StringVar(&p.dir, "out", "", "with --prometheus: where to write report.json, report.html, perfdata.json and summary.txt (default reports/prometheus-<from>)")
	aliasFlag(f, "report-dir", "out")
}

// timeFlag parses a time as Prometheus's API does: RFC 3339 or Unix seconds.
func timeFlag(name, v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Unix(0, int64(s*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time (2026-03-01T12:00:00Z) or Unix seconds", name, v)
}

// runProm builds a report from Prometheus and writes its directory. Everything is checked before
// any query.
func (p *promFlags) run(cmd *cobra.Command) error {
	u, err := url.Parse(p.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--prometheus %q: want the server's URL, http://HOST:PORT", p.url)
	}
	var base *record.Record
	if p.phasesFrom != "" {
		r, err := report.ReadFile(p.phasesFrom)
		if err != nil {
			return fmt.Errorf("--phases-from: %w", err)
		}
		base = &r.Record
	}
	var baseStart, baseEnd *time.Time
	if base != nil {
		baseStart, baseEnd = &base.Start, &base.End
	}
	from, err := boundFlag("from", p.from, baseStart, "start")
	if err != nil {
		return err
	}
	to, err := boundFlag("to", p.to, baseEnd, "end")
	if err != nil {
		return err
	}
	if !to.After(from) {
		return fmt.Errorf("--to %s is not after --from %s", to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	if p.step < 0 {
		return fmt.Errorf("--step %s: want a positive duration", p.step)
	}
	client, err := api.NewClient(api.Config{Address: strings.TrimSuffix(p.url, "/")})
	if err != nil {
		return fmt.Errorf("--prometheus %q: %w", p.url, err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Minute)
	defer cancel()
	rec, err := promrecord.Read(ctx, v1.NewAPI(client), promrecord.Options{
		URL: p.url, From: from, To: to, Step: p.step, Base: base, BaseName: p.phasesFrom,
	})
	if err != nil {
		return err
	}
	v := run.Versions()
	rec.Versions.Fakelet, rec.Versions.Go = v.Fakelet, v.Go
	r := report.Build(rec)
	r.Parameters.Args = os.Args
	dir := p.dir
	if dir == "" {
		dir = "reports/prometheus-" + from.UTC().Format("20060102-150405")
	}
	if err := r.WriteDir(dir); err != nil {
		return err
	}
	if err := r.WriteText(cmd.OutOrStdout()); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", dir)
	return nil
}

// boundFlag is the time --name gives, or else the base report's (its start or end, as which says).
func boundFlag(name, value string, base *time.Time, which string) (time.Time, error) {
	switch {
	case value != "":
		return timeFlag(name, value)
	case base != nil:
		return *base, nil
	}
	return time.Time{}, fmt.Errorf("--prometheus needs --%s (or --phases-from, whose report's %s it takes)", name, which)
}
