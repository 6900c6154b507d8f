package capacity

import (
	"context"
	"testing"
	"time"
)

func TestReportNamesTheAnswerAndEveryLevelOfEveryStep(t *testing.T) {
	f := &fakeFleet{now: t0}
	c := config(2000, 3000, 10000)
	r, err := Run(context.Background(), c, f, f)
	if err != nil {
		t.Fatal(err)
	}
	rep := r.Report(c)
	if rep.Held != 5000 || rep.Broke == nil || rep.Broke.Level != LevelMutatingP99 || !rep.Broke.Broken {
		t.Fatalf("held %d, broke %+v: want 5000 and the mutating p99", rep.Held, rep.Broke)
	}
	if got, want := rep.Answer(), "held 5000 nodes; 8000 broke mutating-p99 1.33 s against at most 1 s (33% over)"; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	if len(rep.Steps) != 3 || rep.Settle != "1m0s" || rep.Hold != "2m0s" {
		t.Fatalf("steps %d, settle %s, hold %s", len(rep.Steps), rep.Settle, rep.Hold)
	}
	last := rep.Steps[2]
	if len(last.Levels) != 5 {
		t.Fatalf("levels %+v, want all five", last.Levels)
	}
	renewal := last.Levels[3]
	if renewal.Level != LevelRenewalP99 || renewal.Value != 10.2 || renewal.Limit != 11 || renewal.Unit != "s" || renewal.Broken {
		t.Errorf("renewal level %+v, want 10.2 s held against 11 s", renewal)
	}
	if len(last.Processes) != 1 {
		t.Errorf("processes %+v", last.Processes)
	}
}

func TestReportOfStatusModeLeavesTheRenewalLevelOut(t *testing.T) {
	c := config(1000, 1000, 1000)
	r := Result{Held: 1000, Steps: []StepResult{{Nodes: 1000, From: t0, To: t0.Add(time.Minute), Measured: Measured{MutatingP99: 0.1}}}}
	rep := r.Report(c)
	for _, l := range rep.Steps[0].Levels {
		if l.Level == LevelRenewalP99 {
			t.Errorf("status mode (no renewal) has a renewal level: %+v", l)
		}
	}
	if got, want := rep.Answer(), "every step held every level, up to --max: the control plane holds at least 1000 nodes"; got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
}
