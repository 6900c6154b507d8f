package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/report"
)

var updateReportGolden = flag.Bool("update-report", false, "rewrite cmd/fakelet/testdata/report-cli.golden")

// TestReportCommandRendersASavedReport: fakelet report FILE.json prints the table and writes the page.
func TestReportCommandRendersASavedReport(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	phases := []reaction.Phase{{Name: "steady", Start: at(0), End: at(10)}, {Name: "outage", Start: at(10), End: at(60)}}
	actions := []reaction.Action{{Phase: "outage", Group: "victims", Op: "stop", Node: "n1", At: at(10), LastRenewal: at(8)}}
	ts := []observe.Transition{
		{At: at(1), Node: "n0", Kind: observe.Condition, Type: "Ready", Status: "True"},
		{At: at(1), Node: "n1", Kind: observe.Condition, Type: "Ready", Status: "True"},
		{At: at(33), Node: "n1", Kind: observe.Condition, Type: "Ready", Status: "Unknown"},
	}
	r := report.Build(record.Record{
		Profile: "stop-1", Parameters: record.Parameters{Nodes: 2, Mode: "lease"},
		Versions: record.Versions{Fakelet: "test", Go: "go1.26"},
		Target:   record.Target{Description: "https://127.0.0.1:6443 (test)"},
		Start:    at(0), End: at(60), Phases: phases,
		Nodes:     record.Nodes{Timeline: observe.Timeline(ts, at(0), at(60), time.Second), Transitions: len(ts)},
		Reactions: reaction.SummarizeResults(reaction.Extract(actions, phases, ts), phases),
		Load:      record.LoadOf(nil, phases, at(0), at(60)),
	})
	dir := t.TempDir()
	file := filepath.Join(dir, report.JSONFile)
	fh, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	out, err := runFakelet(t, "report", file)
	if err != nil {
		t.Fatalf("fakelet report: %v\n%s", err, out)
	}
	out = strings.ReplaceAll(out, dir, "DIR")
	golden := filepath.Join("testdata", "report-cli.golden")
	if *updateReportGolden {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("fakelet report printed:\n%s\nwant (go test -update-report rewrites it):\n%s", out, want)
	}
	if page, err := os.ReadFile(filepath.Join(dir, report.HTMLFile)); err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("report.html beside the JSON: %v, charts: %v", err, strings.Contains(string(page), "<svg"))
	}
	if _, err := runFakelet(t, "report", filepath.Join(dir, "missing.json")); err == nil {
		t.Error("fakelet report of a missing file succeeded")
	}
}
