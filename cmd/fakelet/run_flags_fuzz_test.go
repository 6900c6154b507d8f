package main

import (
	"math"
	"testing"
	"time"

	"fakelet.dev/fakelet/fleetname"
)

// FuzzRunFlags gives `fakelet run`'s checks arbitrary values of its numeric and duration flags: they
// must never panic, and a configuration they accept must be within every limit of limits.go, with
// the values given and not wrapped or replaced.
func FuzzRunFlags(f *testing.F) {
	f.Add("1000", "100", "40s", "0s", "10s", "5m", "15s", "0", "0s", "50", "")
	f.Add("9223372036854775807", "NaN", "5000000000s", "1ms", "1ms", "1ms", "0s", "-1", "-1s", "51", "")
	f.Add("100000000", "+Inf", "1s", "250ms", "1s", "1s", "1s", "100000000", "1s", "0", "steady")
	f.Add("3", "1e-300", "2147483647s", "2147483646s", "1s", "1s", "1s", "3", "999ms", "0", "stop-10pct")
	f.Fuzz(func(t *testing.T, nodes, qps, lease, renew, update, reportFreq, scrapeInterval, connections, coalesce, images, profile string) {
		args := []string{
			"--nodes=" + nodes, "--register-qps=" + qps, "--lease-duration=" + lease, "--renew-interval=" + renew,
			"--status-update-frequency=" + update, "--status-report-frequency=" + reportFreq,
			"--scrape-interval=" + scrapeInterval, "--connections=" + connections, "--coalesce=" + coalesce, "--images=" + images,
		}
		if profile == "steady" || profile == "stop-10pct" {
			args = append(args, "--profile="+profile) // built-ins only: a path would read files
		}
		rf := &runFlags{}
		cmd := newRunCommandFor(rf)
		if err := cmd.ParseFlags(args); err != nil {
			return
		}
		r, _, err := rf.prepare(cmd.Flags())
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		cfg := r.Config()
		hb := cfg.Heartbeat
		switch {
		case cfg.Nodes < 1 || cfg.Nodes > fleetname.MaxNodes:
			t.Fatalf("accepted %d nodes", cfg.Nodes)
		case machineMemory() > 0 && uint64(cfg.Nodes)*nodeMemory > machineMemory():
			t.Fatalf("accepted %d nodes, beyond the machine's memory", cfg.Nodes)
		case cfg.Connections < 1 || cfg.Connections > cfg.Nodes:
			t.Fatalf("accepted %d connections for %d nodes", cfg.Connections, cfg.Nodes)
		case !(cfg.RegisterQPS > 0) || math.IsInf(cfg.RegisterQPS, 0):
			t.Fatalf("accepted --register-qps %v", cfg.RegisterQPS)
		case hb.LeaseDurationSeconds <= 0 || time.Duration(hb.LeaseDurationSeconds)*time.Second != rf.leaseDuration:
			t.Fatalf("--lease-duration %v became %d seconds", rf.leaseDuration, hb.LeaseDurationSeconds)
		case hb.RenewInterval < minRenewInterval || hb.RenewInterval >= time.Duration(hb.LeaseDurationSeconds)*time.Second:
			t.Fatalf("accepted renew interval %v with a %ds lease", hb.RenewInterval, hb.LeaseDurationSeconds)
		case hb.StatusUpdateFrequency < minStatusUpdateFrequency || hb.StatusReportFrequency < hb.StatusUpdateFrequency:
			t.Fatalf("accepted status update frequency %v, report frequency %v", hb.StatusUpdateFrequency, hb.StatusReportFrequency)
		case rf.report.ScrapeInterval < minScrapeInterval:
			t.Fatalf("accepted --scrape-interval %v", rf.report.ScrapeInterval)
		case cfg.Coalesce < 0 || cfg.Coalesce > time.Second:
			t.Fatalf("accepted --coalesce %v", cfg.Coalesce)
		}
	})
}
