package report

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/measure/storm"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// fixture is a recorded stop of two of ten nodes: steady 60 s, outage 120 s, recovery 60 s, with
// scrapes every 15 s (and at the boundaries, which fall on them).
func fixture() observed {
	phases := []reaction.Phase{
		{Name: "steady", Start: at(0), End: at(60)},
		{Name: "outage", Start: at(60), End: at(180)},
		{Name: "recovery", Start: at(180), End: at(240)},
	}
	var ts []observe.Transition
	tr := func(s float64, node string, kind observe.Kind, typ, status string) {
		ts = append(ts, observe.Transition{At: at(s), Node: node, Kind: kind, Type: typ, Status: status})
	}
	for i := range 10 {
		n := fmt.Sprintf("node-%02d", i)
		tr(0.5, n, observe.Condition, "Ready", "True")
	}
	var actions []reaction.Action
	for k, n := range []string{"node-02", "node-05"} {
		d := float64(k)
		actions = append(actions,
			reaction.Action{Phase: "outage", Group: "victims", Op: "stop", Node: n, At: at(60), LastRenewal: at(57 + d)},
			reaction.Action{Phase: "recovery", Group: "victims", Op: "start", Node: n, At: at(180), LastRenewal: at(57 + d)},
		)
		tr(81+2*d, n, observe.Condition, "Ready", "Unknown")
		tr(81.1+2*d, n, observe.TaintAdded, "node.kubernetes.io/unreachable", "NoSchedule")
		tr(182+d, n, observe.Condition, "Ready", "True")
		tr(183+d, n, observe.TaintRemoved, "node.kubernetes.io/unreachable", "NoSchedule")
	}
	tr(91, "node-02", observe.TaintAdded, "node.kubernetes.io/unreachable", "NoExecute")
	tr(184, "node-02", observe.TaintRemoved, "node.kubernetes.io/unreachable", "NoExecute")

	var snaps []scrape.Snapshot
	bounds := []float64{0.005, 0.025, 0.1, math.Inf(1)}
	for s := 0.0; s <= 240; s += 15 {
		silent := max(0, min(s, 180)-60) // two nodes renew nothing during the outage
		puts := s - silent*0.2           // ten nodes, a renewal every 10 s: 1/s
		lat := &scrape.Series{Labels: []string{"PUT", "leases", ""}, Value: puts, Sum: puts * 0.004, Bounds: bounds,
			Buckets: []float64{puts * 0.9, puts * 0.99, puts, puts}}
		snaps = append(snaps,
			scrape.Snapshot{Component: load.APIServer, At: at(s), Families: map[string]*scrape.Family{
				"apiserver_request_total": {Type: scrape.Counter, Labels: []string{"verb", "resource", "subresource", "code"}, Series: map[string]*scrape.Series{
					"PUT|leases||200":        {Labels: []string{"PUT", "leases", "", "200"}, Value: puts},
					"PATCH|nodes|status|200": {Labels: []string{"PATCH", "nodes", "status", "200"}, Value: 10 + 2*math.Floor(s/180)},
				}},
				"apiserver_request_duration_seconds": {Type: scrape.Histogram, Labels: []string{"verb", "resource", "subresource"}, Series: map[string]*scrape.Series{
					"PUT|leases|": lat,
				}},
				"apiserver_watch_events_total": {Type: scrape.Counter, Labels: []string{"resource"}, Series: map[string]*scrape.Series{
					"leases": {Labels: []string{"leases"}, Value: puts},
				}},
				"process_cpu_seconds_total":     {Type: scrape.Counter, Series: map[string]*scrape.Series{"": {Value: 5 + s*0.05}}},
				"process_resident_memory_bytes": {Type: scrape.Gauge, Series: map[string]*scrape.Series{"": {Value: 300 << 20}}},
				"apiserver_flowcontrol_rejected_requests_total": {Type: scrape.Counter, Labels: []string{"priority_level"}, Series: map[string]*scrape.Series{
					"node-high": {Labels: []string{"node-high"}, Value: 3 * math.Floor(s/195)}, // 3 in the scrape after the start
				}},
			}},
			scrape.Snapshot{Component: load.Fleet, At: at(s), Families: map[string]*scrape.Family{
				scrape.FleetSendLag: {Type: scrape.Histogram, Series: map[string]*scrape.Series{"": {Value: puts, Sum: puts * 0.002,
					Bounds: []float64{0.001, 0.005, lagBound, math.Inf(1)}, Buckets: []float64{puts * 0.5, puts * 0.98, puts, puts}}}},
			}},
			scrape.Snapshot{Component: load.Etcd, At: at(s), Families: map[string]*scrape.Family{
				"etcd_disk_wal_write_bytes_total":  {Type: scrape.Counter, Series: map[string]*scrape.Series{"": {Value: 1e6 + puts*600}}},
				"etcd_mvcc_db_total_size_in_bytes": {Type: scrape.Gauge, Series: map[string]*scrape.Series{"": {Value: 2 << 20}}},
			}},
		)
	}
	snaps = append(snaps, scrape.Snapshot{Component: load.ControllerManager, At: at(30), Err: "connection refused"})
	return observed{Record: record.Record{
		Profile:    "stop-2",
		Parameters: record.Parameters{Nodes: 10, Mode: "lease", LeaseDurationSeconds: 40, RenewInterval: "10s", StatusUpdateFrequency: "10s", StatusReportFrequency: "5m0s", Identity: "node", Images: 50, RegisterQPS: 50, ScrapeInterval: "15s"},
		Versions:   record.Versions{Fakelet: "test", Go: "go1.26", Server: "v1.37.2"},
		Target:     record.Target{Server: "https://127.0.0.1:6443", Description: "https://127.0.0.1:6443 (local control plane in /tmp/cp)", Local: true},
		Start:      at(0), End: at(240),
		Phases:      phases,
		FalseAlarms: []falsealarm.Count{{Phase: "outage", Event: "ready_unknown", Count: 1, ServerLatency: 1, Nodes: []string{"node-07"}}},
		Workloads:   fixtureWorkloads(),
	}, Actions: actions, Transitions: ts, Snapshots: snaps, Storms: []storm.Storm{fixtureStorm()}}
}

// observed is a run as its session saw it: its description, and the raw observations that record
// turns into its Record, here every action and transition (which a session does not keep).
type observed struct {
	record.Record
	Actions     []reaction.Action
	Transitions []observe.Transition
	Snapshots   []scrape.Snapshot
	// Storms are the storm recorder's, which record.Storms completes with the scrapes.
	Storms []storm.Storm
}

// record is o's Record, each field computed as the session computes it.
func (o observed) record() record.Record {
	rec := o.Record
	rec.Phases = record.RunPhases(rec.Phases, rec.Start, rec.End)
	rec.Nodes = record.Nodes{
		Timeline:    observe.Timeline(o.Transitions, rec.Start, rec.End, record.TimelineStep(rec.Start, rec.End)),
		Transitions: len(o.Transitions),
	}
	if len(o.Actions) > 0 {
		rec.Reactions = reaction.SummarizeResults(reaction.Extract(o.Actions, rec.Phases, o.Transitions), rec.Phases)
	}
	rec.Storms = record.Storms(o.Storms, rec.Phases, o.Snapshots)
	rec.Load = record.LoadOf(o.Snapshots, rec.Phases, rec.Start, rec.End)
	return rec
}

func build(o observed) *Report { return Build(o.record()) }

// fixtureStorm is the two victims' storm, from their stop to the second one's return: nothing sent
// while they are stopped, then the restarted kubelets' startup in their first two seconds.
func fixtureStorm() storm.Storm {
	s := storm.Storm{Start: at(60), End: at(181.5), Causes: map[string]int{"process": 2}, Nodes: 2, Recovered: 2,
		Seconds: make([]storm.Second, 122)}
	s.Seconds[120] = storm.Second{Requests: map[string]int{"watch pods": 2, "watch nodes": 2, "create nodes": 2, "get nodes": 2, "get leases": 2}, Throttled: 1}
	s.Seconds[121] = storm.Second{Requests: map[string]int{"watch pods": 1, "patch nodes": 2}, Recovered: 2}
	return s
}

// lagBound is the fixture's highest finite send lag bucket: where its slowest 2% fall.
var lagBound = 0.01

// A run whose own send lag p99 passes a second says so first, in the summary and on the page.
func TestGeneratorBoundRunSaysSoFirst(t *testing.T) {
	defer func(b float64) { lagBound = b }(lagBound)
	lagBound = 30 // p99 in the bucket from 5 ms to 30 s
	r := build(fixture())
	if !r.GeneratorBound {
		t.Fatalf("send lag %+v: not generator bound", r.Load.Run.SendLag)
	}
	var text, page bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(text.String(), "\n"); !strings.HasPrefix(first, "WARNING: fakelet's own send lag p99 was ") ||
		!strings.HasSuffix(first, "the generator, not the control plane, was the bottleneck of this run") {
		t.Errorf("first line of the summary: %q", first)
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	h1 := strings.Index(page.String(), "<h1>")
	warn := strings.Index(page.String(), "the generator, not the control plane, was the bottleneck")
	if warn < 0 || warn < h1 || warn > strings.Index(page.String(), "<dl>") {
		t.Errorf("report.html has no warning under its title")
	}
	if build(fixtureWithLag(0.01)).GeneratorBound {
		t.Errorf("a send lag p99 under 10 ms is generator bound")
	}
}

func fixtureWithLag(bound float64) observed {
	defer func(b float64) { lagBound = b }(lagBound)
	lagBound = bound
	return fixture()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
	}
}

func TestTextGolden(t *testing.T) {
	var b bytes.Buffer
	if err := build(fixture()).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden", b.Bytes())
}

// A saved report.json renders the same text as the report it was written from.
func TestJSONRoundTripRendersTheSame(t *testing.T) {
	r := build(fixture())
	var js, before, after bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&js)
	if err != nil {
		t.Fatal(err)
	}
	_ = r.WriteText(&before)
	_ = back.WriteText(&after)
	if before.String() != after.String() {
		t.Errorf("text from report.json differs:\n%s\nwant\n%s", after.String(), before.String())
	}
	if _, err := Read(strings.NewReader(`{"version": "fakelet.dev/report/v0"}`)); err == nil {
		t.Error("read a report of another schema version")
	}
}

func TestHTMLIsSelfContainedWithCharts(t *testing.T) {
	var b bytes.Buffer
	if err := build(fixture()).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "<svg"); n != 5 {
		t.Errorf("%d charts, want 5 (states, request rate, latency, WAL, reactions)", n)
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=|<script|@import|url\(`).FindString(page); m != "" {
		t.Errorf("the page loads something from elsewhere: %q", m)
	}
}

func TestPerfData(t *testing.T) {
	pd := build(fixture()).PerfData()
	if pd.Version != "v1" {
		t.Errorf("version %q, want v1", pd.Version)
	}
	var found bool
	for _, it := range pd.DataItems {
		if it.Labels["Metric"] == "ReactionLatency" && it.Labels["Event"] == reaction.ReadyUnknown && it.Labels["From"] == reaction.FromLastRenewal {
			found = true
			// 81-57 = 24 s and 83-58 = 25 s
			if it.Unit != "ms" || it.Data["Perc50"] != 24000 || it.Data["Perc99"] != 25000 {
				t.Errorf("ready_unknown from last renewal: %+v, want p50 24000 ms, p99 25000 ms", it)
			}
		}
	}
	if !found {
		t.Error("no ready_unknown reaction latency from the last renewal")
	}
}

func TestWriteDir(t *testing.T) {
	dir := t.TempDir()
	if err := build(fixture()).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{JSONFile, HTMLFile, PerfDataFile, TextFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestCompareGolden(t *testing.T) {
	r := build(fixture())
	steady := r.Load.Phases[0]
	doubled := steady
	doubled.Etcd = &load.EtcdLoad{WALBytes: steady.Etcd.WALBytes * 8, DBGrowth: 1 << 20}
	c := &Comparison{Nodes: 10, Duration: "1m0s", Sides: []Side{{Mode: "lease", Load: steady}, {Mode: "status", Load: doubled}}}
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.golden", b.Bytes())
}

// A storm's figures: its phase, how long until every node was back, its requests by kind with their
// peak second, the fleet's 429s and the apiserver's rejections between the scrapes around it.
func TestStormFigures(t *testing.T) {
	r := build(fixture())
	if len(r.Storms) != 1 {
		t.Fatalf("%d storms, want 1", len(r.Storms))
	}
	s := r.Storms[0]
	if s.Phase != "outage" || s.AllBackSeconds == nil || *s.AllBackSeconds != 121.5 || s.Nodes != 2 || s.Recovered != 2 || s.Throttled != 1 {
		t.Errorf("storm %+v", s)
	}
	if s.APFRejected == nil || *s.APFRejected != 3 || !s.APFFrom.Equal(at(60)) || !s.APFTo.Equal(at(195)) {
		t.Errorf("APF rejections %v between %v and %v, want 3 between +60s and +195s", s.APFRejected, s.APFFrom, s.APFTo)
	}
	want := []record.StormRequests{
		{Verb: "watch", Resource: "pods", Count: 3, Peak: 2, PeakSecond: 120, Rate: 3.0 / 122},
		{Verb: "create", Resource: "nodes", Count: 2, Peak: 2, PeakSecond: 120, Rate: 2.0 / 122},
		{Verb: "get", Resource: "leases", Count: 2, Peak: 2, PeakSecond: 120, Rate: 2.0 / 122},
		{Verb: "get", Resource: "nodes", Count: 2, Peak: 2, PeakSecond: 120, Rate: 2.0 / 122},
		{Verb: "patch", Resource: "nodes", Count: 2, Peak: 2, PeakSecond: 121, Rate: 2.0 / 122},
		{Verb: "watch", Resource: "nodes", Count: 2, Peak: 2, PeakSecond: 120, Rate: 2.0 / 122},
	}
	if fmt.Sprint(s.Requests) != fmt.Sprint(want) {
		t.Errorf("requests\n%v\nwant\n%v", s.Requests, want)
	}

	// Not all back: no time; no scrape after it: no rejections.
	rec := fixture()
	rec.Storms[0].End, rec.Storms[0].Recovered = time.Time{}, 1
	rec.Storms[0].Seconds = rec.Storms[0].Seconds[:1]
	rec.End = at(300)
	rec.Storms = append(rec.Storms, storm.Storm{Start: at(239), Causes: map[string]int{"watch": 1}, Nodes: 1})
	r = build(rec)
	if s := r.Storms[0]; s.AllBackSeconds != nil || s.APFRejected == nil || *s.APFRejected != 0 {
		t.Errorf("a storm not over: all back %v, rejected %v", s.AllBackSeconds, s.APFRejected)
	}
	if s := r.Storms[1]; s.Phase != "recovery" || s.APFRejected != nil {
		t.Errorf("a storm after the last scrape: phase %q, rejected %v", s.Phase, s.APFRejected)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"outage +0s: 2 nodes (2 process), 1 of 2 not back by the end", "recovery +59s: 1 nodes (1 watch), 1 of 1 not back by the end; 429s to the fleet 0, APF rejections not scraped"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("summary has no line %q:\n%s", line, b.String())
		}
	}
}
