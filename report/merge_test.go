package report

import (
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
)

// shardReport is one shard's report of a 3-shard run: nodes, transitions, renewals, reactions and
// fleet requests that scale with i, so that the sums are easy to check.
func shardReport(i int, start time.Time) *Report {
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	samples := []float64{float64(40 + i), float64(41 + i)}
	renewal := reaction.Summarize(samples)
	return &Report{Version: SchemaVersion, GeneratorBound: i == 2, Record: record.Record{
		Profile:    "stop-10pct",
		Parameters: record.Parameters{Nodes: 10 + i, Args: []string{"run", "--shard", "x"}},
		Target:     record.Target{Server: "https://127.0.0.1:6443"},
		Start:      at(i), End: at(100 + i),
		Phases: []reaction.Phase{{Name: "warmup", Start: at(10 + i), End: at(40 + i)}, {Name: "stop", Start: at(40 + i), End: at(90 + i)}},
		Nodes: record.Nodes{
			Timeline: []observe.StateCount{
				{At: at(i), Ready: 0, NotReady: 10 + i},
				{At: at(10 + i), Ready: 10 + i},
				{At: at(60 + i), Ready: 9 + i, Unknown: 1},
			},
			Transitions:       100 * (i + 1),
			LeaseRenewalsSeen: int64(1000 * (i + 1)),
		},
		Reactions: []reaction.Summary{{
			Phase: "stop", Group: "tenth", Op: "stop", Event: "ready_unknown",
			Actions: 2, Reacted: 2, Missing: i, MissingNodes: []string{"fakelet-0000" + string(rune('0'+i))}[:min(i, 1)],
			FromAction: reaction.Summarize([]float64{float64(30 + i), float64(31 + i)}), FromLastRenewal: &renewal, Samples: samples,
		}, {
			Phase: "stop", Group: "tenth", Op: "stop", Event: "lease_gone",
			Actions: 2, Reacted: 1, FromAction: reaction.Summarize([]float64{float64(i)}), Samples: []float64{float64(i)},
		}},
		FalseAlarms: []falsealarm.Count{{Phase: "stop", Event: "ready_unknown", Count: 1 + i, None: 1 + i,
			Nodes: []string{"fakelet-0000" + string(rune('0'+i))}}},
		Load: record.Load{
			Phases: []load.Phase{{Name: "warmup", Fleet: []load.FleetRequests{{Verb: "PUT", Resource: "leases", OK: 100, Rate: 1, P50: float64(i), P99: 1}}}, {Name: "stop"}},
			Run:    load.Phase{Name: "run", Seconds: 100, SendLag: &load.SendLag{Ticks: 100, P50: 0.001, P99: 0.5 * float64(i+1)}, Fleet: []load.FleetRequests{{Verb: "PUT", Resource: "leases", OK: float64(1000 * (i + 1)), Errors: 1, Rate: 10}}},
		},
	}}
}

func TestMergeAddsTheShardsUp(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var shards []*Report
	for i := range 3 {
		shards = append(shards, shardReport(i, start))
	}
	m, err := Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	if fa := m.FalseAlarms; len(fa) != 1 || fa[0].Count != 6 || fa[0].None != 6 || len(fa[0].Nodes) != 3 {
		t.Errorf("false alarms %+v: want the shards' 6, on their 3 nodes", fa)
	}
	if l := m.Load.Run.SendLag; !m.GeneratorBound || l == nil || l.Ticks != 300 || l.P99 != 1.5 {
		t.Errorf("generator bound %v, send lag %+v: want bound, as the third shard, with its p99 and every tick", m.GeneratorBound, l)
	}
	if m.Parameters.Nodes != 10+11+12 || m.Nodes.Transitions != 100+200+300 || m.Nodes.LeaseRenewalsSeen != 1000+2000+3000 {
		t.Errorf("nodes %d, transitions %d, renewals %d; want the shards' sums 33, 600, 6000",
			m.Parameters.Nodes, m.Nodes.Transitions, m.Nodes.LeaseRenewalsSeen)
	}
	if m.Parameters.Args != nil {
		t.Errorf("merged args %q: one shard's command line is not the merged run's", m.Parameters.Args)
	}
	if !m.Start.Equal(start) || !m.End.Equal(start.Add(102*time.Second)) ||
		!m.Phases[1].Start.Equal(start.Add(40*time.Second)) || !m.Phases[1].End.Equal(start.Add(92*time.Second)) {
		t.Errorf("run %v..%v, phase 2 %v..%v; want the earliest starts and latest ends", m.Start, m.End, m.Phases[1].Start, m.Phases[1].End)
	}
	// After every shard's last point, the timeline is the sum of their last states.
	last := m.Nodes.Timeline[len(m.Nodes.Timeline)-1]
	if last.Ready != 9+10+11 || last.Unknown != 3 || last.NotReady != 0 {
		t.Errorf("last timeline point %+v, want 30 Ready and 3 Unknown", last)
	}
	if first := m.Nodes.Timeline[0]; first.NotReady != 10 || first.Ready != 0 {
		t.Errorf("first timeline point %+v: only shard 0 had begun", first)
	}
	if len(m.Reactions) != 2 {
		t.Fatalf("%d reaction rows, want 2", len(m.Reactions))
	}
	r := m.Reactions[0]
	if r.Actions != 6 || r.Reacted != 6 || r.Missing != 0+1+2 || len(r.Samples) != 6 || len(r.MissingNodes) != 2 {
		t.Errorf("reaction %+v: want the shards' sums", r)
	}
	if r.FromLastRenewal == nil || *r.FromLastRenewal != reaction.Summarize(r.Samples) || r.FromLastRenewal.Max != 43 {
		t.Errorf("from last renewal %+v, want the exact statistics of the merged samples", r.FromLastRenewal)
	}
	if r.FromAction.Count != 6 || r.FromAction.Min != 30 || r.FromAction.Max != 33 {
		t.Errorf("from action %+v: count, min and max must be exact", r.FromAction)
	}
	if g := m.Reactions[1]; g.FromAction != reaction.Summarize([]float64{0, 1, 2}) || g.FromLastRenewal != nil {
		t.Errorf("lease_gone %+v: want exact statistics from the action", g)
	}
	if f := m.Load.Run.Fleet[0]; f.OK != 6000 || f.Errors != 3 || f.Rate != 30 {
		t.Errorf("fleet requests %+v, want the shards' sums", f)
	}
	if f := m.Load.Phases[0].Fleet[0]; f.OK != 300 || f.P50 != 1 {
		t.Errorf("warmup fleet requests %+v, want 300 OK and p50 weighted to 1", f)
	}
}

func TestMergeRefusesReportsOfDifferentRuns(t *testing.T) {
	start := time.Now()
	a, b := shardReport(0, start), shardReport(1, start)
	b.Profile = "steady"
	if _, err := Merge([]*Report{a, b}); err == nil {
		t.Error("reports of two profiles merged")
	}
	b = shardReport(1, start)
	b.Target.Server = "https://elsewhere"
	if _, err := Merge([]*Report{a, b}); err == nil {
		t.Error("reports of two clusters merged")
	}
	if _, err := Merge(nil); err == nil {
		t.Error("no reports merged")
	}
}
