package main

import (
	"bytes"
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

// TestReportMergeCommand: fakelet report merge writes the merged report.json, whose counts are the
// shards' sums, and prints its summary.
func TestReportMergeCommand(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	dir := t.TempDir()
	var files []string
	for i, node := range []string{"fakelet-00000", "fakelet-00001"} {
		phases := []reaction.Phase{{Name: "steady", Start: at(0), End: at(10)}, {Name: "outage", Start: at(10), End: at(60)}}
		actions := []reaction.Action{{Phase: "outage", Group: "victims", Op: "stop", Node: node, At: at(10), LastRenewal: at(8)}}
		ts := []observe.Transition{
			{At: at(1), Node: node, Kind: observe.Condition, Type: "Ready", Status: "True"},
			{At: at(33 + i), Node: node, Kind: observe.Condition, Type: "Ready", Status: "Unknown"},
		}
		r := report.Build(record.Record{
			Profile: "stop-1", Parameters: record.Parameters{Nodes: 1, Mode: "lease"},
			Target: record.Target{Server: "https://127.0.0.1:6443"},
			Start:  at(0), End: at(60), Phases: phases,
			Nodes:     record.Nodes{Timeline: observe.Timeline(ts, at(0), at(60), time.Second), Transitions: len(ts)},
			Reactions: reaction.SummarizeResults(reaction.Extract(actions, phases, ts), phases),
			Load:      record.LoadOf(nil, phases, at(0), at(60)),
		})
		file := filepath.Join(dir, node+".json")
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	out := filepath.Join(dir, "merged.json")
	root := newRootCommand()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(append([]string{"report", "merge", "-o", out}, files...))
	if err := root.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	m, err := report.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Parameters.Nodes != 2 || m.Nodes.Transitions != 4 {
		t.Errorf("merged %d nodes, %d transitions; want 2 and 4", m.Parameters.Nodes, m.Nodes.Transitions)
	}
	var unknown *reaction.Summary
	for i := range m.Reactions {
		if m.Reactions[i].Op == "stop" && m.Reactions[i].Reacted > 0 {
			unknown = &m.Reactions[i]
		}
	}
	if unknown == nil || unknown.Actions != 2 || unknown.Reacted != 2 || unknown.FromLastRenewal == nil ||
		unknown.FromLastRenewal.Min != 25 || unknown.FromLastRenewal.Max != 26 {
		t.Errorf("merged reactions %+v: want both stops, 25 s and 26 s from the last renewal", m.Reactions)
	}
	if !strings.Contains(stderr.String(), "merged 2 reports of 2 nodes in all") || stdout.Len() == 0 {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}
