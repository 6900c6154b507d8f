package main

import (
	"time"

	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/internal/run"
	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/scrape"
)

// addReportFlags binds the flags of how a run is measured and where its report goes.
func addReportFlags(f *pflag.FlagSet, rf *run.ReportOptions) {
	f.StringVar(&rf.Dir, "out", "", "write report.json, report.html, perfdata.json and summary.txt here (default reports/<profile>-<timestamp>/)")
	aliasFlag(f, "report-dir", "out")
	f.DurationVar(&rf.ScrapeInterval, "scrape-interval", scrape.DefaultInterval, "scrape the control plane's /metrics this often, besides at every phase boundary")
	f.BoolVar(&rf.WatchLeases, "watch-leases", true, "watch the fleet's Leases to count renewals and see deleted ones recreated (one more watcher of every Lease write)")
	addGracePeriodFlag(f, &rf.GracePeriod)
}

// addGracePeriodFlag adds --node-monitor-grace-period, which the false alarms' attribution needs.
func addGracePeriodFlag(f *pflag.FlagSet, d *time.Duration) {
	f.DurationVar(d, "node-monitor-grace-period", 0, "the target's kube-controller-manager --node-monitor-grace-period, "+
		"the window before a false alarm whose requests say what caused it (default: the local control plane's own, else the controller's default, "+
		falsealarm.DefaultGrace.String()+")")
}
