package promrecord

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/expfmt"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/report"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// at is the time of scrape i: every 15 s from t0.
func at(i int) time.Time { return t0.Add(time.Duration(i) * 15 * time.Second) }

const scrapes = 9 // t0 to t0+120s

// The apiserver restarts between scrapes 4 and 5: its counters start again from zero.
func apiserverText(i int) string {
	var puts, patches, cpu float64
	// Buckets of PUT leases latency (0.005, 0.025, 0.1, +Inf), cumulative; steady phase requests
	// are faster than the outage's.
	var b [4]float64
	var sum float64
	step := func(n int, inc [4]float64, s float64) {
		for k := 0; k < n; k++ {
			for j := range b {
				b[j] += inc[j]
			}
			sum += s
		}
	}
	if i <= 4 {
		puts, patches, cpu = 1000+150*float64(i), 500+10*float64(i), 20+2*float64(i)
		b = [4]float64{900, 990, 1000, 1000}
		sum = 5
		step(min(i, 3), [4]float64{100, 140, 150, 150}, 0.75)
		step(max(i-3, 0), [4]float64{50, 120, 150, 150}, 2.5)
	} else {
		puts, patches, cpu = 40+150*float64(i-5), 4+10*float64(i-5), 0.5+2*float64(i-5)
		b = [4]float64{10, 30, 40, 40}
		sum = 0.5
		step(i-5, [4]float64{50, 120, 150, 150}, 2.5)
	}
	mem := 200e6 + 1e6*float64(i%4)
	return fmt.Sprintf(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} %g
apiserver_request_total{code="200",component="apiserver",group="",resource="nodes",scope="resource",subresource="status",verb="PATCH",version="v1"} %g
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",resource="leases",subresource="",verb="PUT",le="0.005"} %g
apiserver_request_duration_seconds_bucket{component="apiserver",resource="leases",subresource="",verb="PUT",le="0.025"} %g
apiserver_request_duration_seconds_bucket{component="apiserver",resource="leases",subresource="",verb="PUT",le="0.1"} %g
apiserver_request_duration_seconds_bucket{component="apiserver",resource="leases",subresource="",verb="PUT",le="+Inf"} %g
apiserver_request_duration_seconds_sum{component="apiserver",resource="leases",subresource="",verb="PUT"} %g
apiserver_request_duration_seconds_count{component="apiserver",resource="leases",subresource="",verb="PUT"} %g
# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="coordination.k8s.io",kind="Lease",resource="leases",version="v1"} %g
# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="system-nodes",priority_level="node-high"} %g
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total %g
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes %g
`, puts, patches, b[0], b[1], b[2], b[3], sum, b[3], 2*puts, puts+patches, cpu, mem)
}

func etcdText(i int) string {
	return fmt.Sprintf(`# TYPE etcd_mvcc_db_total_size_in_bytes gauge
etcd_mvcc_db_total_size_in_bytes %g
# TYPE etcd_disk_wal_write_bytes_total gauge
etcd_disk_wal_write_bytes_total %g
# TYPE etcd_mvcc_put_total counter
etcd_mvcc_put_total %g
# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"} %g
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.01"} %g
etcd_disk_wal_fsync_duration_seconds_bucket{le="+Inf"} %g
etcd_disk_wal_fsync_duration_seconds_sum %g
etcd_disk_wal_fsync_duration_seconds_count %g
`, 1<<20+4096*float64(i), 1e5+25600*float64(i*i), 300+150*float64(i), 10+8*float64(i), 10+19*float64(i), 10+20*float64(i), 0.125*float64(i), 10+20*float64(i))
}

func controllerManagerText(i int) string {
	health, unhealthy := 100.0, 0.0
	if i >= 5 {
		health, unhealthy = 70, 3
	}
	return fmt.Sprintf(`# TYPE node_collector_zone_health gauge
node_collector_zone_health{zone=""} %g
# TYPE node_collector_unhealthy_nodes_in_zone gauge
node_collector_unhealthy_nodes_in_zone{zone=""} %g
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total %g
`, health, unhealthy, 3+0.25*float64(i))
}

// fleetText is one shard's exposition: shard a sends 30 lease updates and a failed one (500) per
// scrape interval, shard b 20 and a 404 GET, and restarts between scrapes 5 and 6. Shard a entered
// phase outage at +45.2 s, b at +45.4 s; a began steady at +0.3 s, b at +0.1 s.
func fleetText(shard string, i int) string {
	updates, failed, gets, cpu := 30*float64(i), float64(i), 0.0, 1.0+float64(i)
	start, phase := 0.3, "steady"
	if shard == "b" {
		n := float64(i)
		if i >= 6 {
			n = float64(i - 5)
		}
		updates, failed, gets, cpu = 20*n, 0, n, n
		start = 0.1
	}
	if i >= 4 {
		phase, start = "outage", 45.2
		if shard == "b" {
			start = 45.4
		}
	}
	startTime := float64(t0.Unix()) + start
	return fmt.Sprintf(`# TYPE fakelet_request_duration_seconds histogram
fakelet_request_duration_seconds_bucket{verb="update",resource="leases",code="200",le="0.001"} %g
fakelet_request_duration_seconds_bucket{verb="update",resource="leases",code="200",le="0.002"} %g
fakelet_request_duration_seconds_bucket{verb="update",resource="leases",code="200",le="+Inf"} %g
fakelet_request_duration_seconds_sum{verb="update",resource="leases",code="200"} %g
fakelet_request_duration_seconds_count{verb="update",resource="leases",code="200"} %g
fakelet_request_duration_seconds_bucket{verb="update",resource="leases",code="500",le="0.001"} 0
fakelet_request_duration_seconds_bucket{verb="update",resource="leases",code="500",le="0.002"} 0
fakelet_request_duration_seconds_bucket{verb="update",resource="leases",code="500",le="+Inf"} %g
fakelet_request_duration_seconds_sum{verb="update",resource="leases",code="500"} %g
fakelet_request_duration_seconds_count{verb="update",resource="leases",code="500"} %g
fakelet_request_duration_seconds_bucket{verb="update",resource="leases",code="409",le="+Inf"} %g
fakelet_request_duration_seconds_sum{verb="update",resource="leases",code="409"} 0
fakelet_request_duration_seconds_count{verb="update",resource="leases",code="409"} %g
fakelet_request_duration_seconds_bucket{verb="create",resource="nodes",code="409",le="+Inf"} %g
fakelet_request_duration_seconds_sum{verb="create",resource="nodes",code="409"} 0
fakelet_request_duration_seconds_count{verb="create",resource="nodes",code="409"} %g
fakelet_request_duration_seconds_bucket{verb="get",resource="leases",code="404",le="0.001"} %g
fakelet_request_duration_seconds_bucket{verb="get",resource="leases",code="404",le="0.002"} %g
fakelet_request_duration_seconds_bucket{verb="get",resource="leases",code="404",le="+Inf"} %g
fakelet_request_duration_seconds_sum{verb="get",resource="leases",code="404"} %g
fakelet_request_duration_seconds_count{verb="get",resource="leases",code="404"} %g
# TYPE fakelet_heartbeats_total counter
fakelet_heartbeats_total{kind="lease",result="success"} %g
# TYPE fakelet_nodes gauge
fakelet_nodes{fleet="f",state="ready"} 4
fakelet_nodes{fleet="f",state="not_ready"} 0
fakelet_nodes{fleet="f",state="registered"} 4
# TYPE fakelet_fleet_nodes gauge
fakelet_fleet_nodes{fleet="f"} 4
# TYPE fakelet_profile_info gauge
fakelet_profile_info{profile="p",phase=%q} 1
# TYPE fakelet_profile_phase_start_time_seconds gauge
fakelet_profile_phase_start_time_seconds %.3f
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total %g
%s`, updates/2, updates*0.9, updates, updates*0.001, updates, failed, failed*0.01, failed, failed, failed, gets, gets, gets, gets, gets, gets*0.0005, gets, updates, phase, startTime, cpu, reactionsText(shard, i))
}

// reactionsText is what a shard's metrics say of the outage: a stopped 2 of the victims and b 1 at
// +45.2 s; their ready_unknown came 40-60 s later (a's at 30-45 s and 45-60 s, b's at 45-60 s); a
// counted one expected reaction missing as the run ended.
func reactionsText(shard string, i int) string {
	if i < 4 {
		return ""
	}
	stops, b45, b60 := 2, 0, 0
	if shard == "b" {
		stops = 1
	}
	out := fmt.Sprintf("# TYPE fakelet_actions_total counter\nfakelet_actions_total{op=\"stop\",group=\"victims\"} %d\n", stops)
	if i >= 6 {
		b45, b60 = 1, 2
		if shard == "b" {
			b45, b60 = 0, 1
		}
		out += fmt.Sprintf(`# TYPE fakelet_reaction_latency_seconds histogram
fakelet_reaction_latency_seconds_bucket{event="ready_unknown",group="victims",from="action",le="30"} 0
fakelet_reaction_latency_seconds_bucket{event="ready_unknown",group="victims",from="action",le="45"} %d
fakelet_reaction_latency_seconds_bucket{event="ready_unknown",group="victims",from="action",le="60"} %d
fakelet_reaction_latency_seconds_bucket{event="ready_unknown",group="victims",from="action",le="+Inf"} %d
fakelet_reaction_latency_seconds_sum{event="ready_unknown",group="victims",from="action"} %d
fakelet_reaction_latency_seconds_count{event="ready_unknown",group="victims",from="action"} %d
`, b45, b60, b60, 50*b60, b60)
	}
	if i == 8 && shard == "a" {
		out += "# TYPE fakelet_reactions_missed_total counter\nfakelet_reactions_missed_total{event=\"taint_unreachable_noexecute_added\",group=\"victims\"} 1\n"
	}
	return out
}

// fixture loads every scrape into a fake Prometheus, and returns the control plane's snapshots as
// the run's own scraper would have kept them.
func fixture(t *testing.T) (*fakeProm, []scrape.Snapshot) {
	p := newFakeProm()
	var snaps []scrape.Snapshot
	for i := range scrapes {
		for _, c := range []struct{ job, text string }{
			{load.APIServer, apiserverText(i)}, {load.Etcd, etcdText(i)}, {load.ControllerManager, controllerManagerText(i)},
		} {
			p.scrape(t, c.job, "127.0.0.1:1", at(i), c.text)
			fams, err := scrape.Parse(strings.NewReader(c.text), expfmt.NewFormat(expfmt.TypeTextPlain), scrape.Selection)
			if err != nil {
				t.Fatalf("%s scrape %d: %v", c.job, i, err)
			}
			snaps = append(snaps, scrape.Snapshot{Component: c.job, At: at(i), Families: fams})
		}
		p.scrape(t, "fakelet", "shard-a:9464", at(i), fleetText("a", i))
		p.scrape(t, "fakelet", "shard-b:9464", at(i), fleetText("b", i))
	}
	return p, snaps
}

func queryAPI(t *testing.T, url string) v1.API {
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(c)
}

var phases = []reaction.Phase{{Name: "steady", Start: at(0), End: at(3)}, {Name: "outage", Start: at(3), End: at(8)}}

// TestLoadFromPrometheusEqualsLoadFromScrapes: the same scrapes, read by the run's scraper and by
// Prometheus, give the same report load, phase by phase, over the run and scrape by scrape, across
// the apiserver's restart. The windows begin and end on scrapes, where increase() need not
// extrapolate.
func TestLoadFromPrometheusEqualsLoadFromScrapes(t *testing.T) {
	p, snaps := fixture(t)
	srv := p.server(t)
	want := record.LoadOf(snaps, phases, at(0), at(8))
	base := &record.Record{Profile: "p", Phases: phases, Start: at(0), End: at(8)}
	rec, err := Read(context.Background(), queryAPI(t, srv.URL), Options{URL: srv.URL, From: at(0), To: at(8), Step: 15 * time.Second, Base: base, BaseName: "base.json"})
	if err != nil {
		t.Fatal(err)
	}
	got := rec
	// The fleet is not in the run's scrapes of the control plane: TestFleetFromPrometheusSumsShards.
	for _, l := range append(got.Load.Phases, got.Load.Run) {
		if len(l.Requests) == 0 {
			t.Fatalf("phase %s: no requests from Prometheus", l.Name)
		}
	}
	for i := range got.Load.Phases {
		got.Load.Phases[i].Fleet, got.Load.Phases[i].Processes = nil, withoutFleet(got.Load.Phases[i].Processes)
	}
	got.Load.Run.Fleet, got.Load.Run.Processes = nil, withoutFleet(got.Load.Run.Processes)
	if diff := differ(want, got.Load); diff != "" {
		t.Errorf("load from Prometheus differs from the scrapes' at %s", diff)
	}
	if want.Run.Requests[0].Count != 150*7+40 {
		t.Errorf("the scrapes count %v PUT leases over the run, want 1090 (the restart's 40 whole)", want.Run.Requests[0].Count)
	}
	if got.Source == nil || got.Source.Phases != "base.json" || len(got.Source.Notes) == 0 {
		t.Errorf("source %+v, want phases from base.json and notes", got.Source)
	}
	if got.Parameters.Nodes != 8 || got.Versions.Server != "" {
		t.Errorf("nodes %d, server %q; want 8 (4 per shard) and none", got.Parameters.Nodes, got.Versions.Server)
	}
}

// TestShortPhaseIsReadOverAStep: a phase shorter than a step holds fewer than the two samples
// increase() needs; it is read over the step around it and scaled to its length.
func TestShortPhaseIsReadOverAStep(t *testing.T) {
	p, _ := fixture(t)
	srv := p.server(t)
	short := []reaction.Phase{
		{Name: "a", Start: at(0), End: t0.Add(50 * time.Second)},
		{Name: "b", Start: t0.Add(50 * time.Second), End: t0.Add(62 * time.Second)},
		{Name: "c", Start: t0.Add(62 * time.Second), End: at(8)},
	}
	base := &record.Record{Profile: "p", Phases: short, Start: at(0), End: at(8)}
	rec, err := Read(context.Background(), queryAPI(t, srv.URL), Options{URL: srv.URL, From: at(0), To: at(8), Step: 30 * time.Second, Base: base})
	if err != nil {
		t.Fatal(err)
	}
	b := rec.Load.Phases[1]
	// b (50-62 s) holds one scrape, at 60 s. Read over 41-71 s: the scrapes at 45 and 60 s, 150 PUTs
	// apart, extrapolated to 300 over the 30 s, scaled to 12 s: 120, 10 a second as in every step.
	if b.Seconds != 12 || len(b.Requests) == 0 || math.Abs(b.Requests[0].Count-120) > 1e-9 {
		t.Errorf("phase b: %v s, requests %+v; want 12 s and 120 PUT leases", b.Seconds, b.Requests)
	}
}

func withoutFleet(ps []load.Process) []load.Process {
	var out []load.Process
	for _, p := range ps {
		if p.Component != load.Fleet {
			out = append(out, p)
		}
	}
	return out
}

// differ compares a and b as JSON, numbers within a relative 1e-9, and names the first difference.
func differ(a, b any) string {
	var ja, jb any
	for _, c := range []struct {
		v   any
		out *any
	}{{a, &ja}, {b, &jb}} {
		raw, _ := json.Marshal(c.v)
		_ = json.Unmarshal(raw, c.out)
	}
	return diffJSON("", ja, jb)
}

func diffJSON(path string, a, b any) string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return fmt.Sprintf("%s: %v != %v", path, a, b)
		}
		for k := range av {
			if d := diffJSON(path+"."+k, av[k], bv[k]); d != "" {
				return d
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return fmt.Sprintf("%s: %v != %v", path, a, b)
		}
		for i := range av {
			if d := diffJSON(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); d != "" {
				return d
			}
		}
	case float64:
		bv, ok := b.(float64)
		if !ok || math.Abs(av-bv) > 1e-9*max(1, math.Abs(av)) {
			return fmt.Sprintf("%s: %v != %v", path, a, b)
		}
	default:
		if !reflect.DeepEqual(a, b) {
			return fmt.Sprintf("%s: %v != %v", path, a, b)
		}
	}
	return ""
}

// TestFleetFromPrometheusSumsShards: two shards' requests add up, shard b's restart counts whole,
// codes fold into results as the fleet's own view counts them, and the phases come from
// fakelet_profile_info: each begins at the earliest shard's start.
func TestFleetFromPrometheusSumsShards(t *testing.T) {
	p, _ := fixture(t)
	srv := p.server(t)
	rec, err := Read(context.Background(), queryAPI(t, srv.URL), Options{URL: srv.URL, From: at(0), To: at(8), Step: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := report.Build(rec)
	wantPhases := []reaction.Phase{
		{Name: "steady", Start: t0.Add(100 * time.Millisecond), End: t0.Add(45200 * time.Millisecond)},
		{Name: "outage", Start: t0.Add(45200 * time.Millisecond), End: at(8)},
	}
	if r.Parameters.Mode != "lease" {
		t.Errorf("mode %q, want lease (the shards renewed Leases)", r.Parameters.Mode)
	}
	if r.Profile != "p" || !samePhases(r.Phases, wantPhases) || r.Source.Phases != "fakelet_profile_info" {
		t.Errorf("profile %q, phases %+v from %s; want p, %+v from fakelet_profile_info", r.Profile, r.Phases, r.Source.Phases, wantPhases)
	}
	// Over the run: a 30 x 8 = 240 updates, b 20 x 5 before its restart, 20 after it, 40 since: 160.
	// a's 500s and 409 conflicts are errors (8 + 8); b's 404 GETs and 409 creates (already exists)
	// are answers (5 + 1 + 2 each).
	fleet := map[string]load.FleetRequests{}
	for _, f := range r.Load.Run.Fleet {
		fleet[f.Verb+" "+f.Resource] = f
	}
	if u := fleet["update leases"]; u.OK != 400 || u.Errors != 16 || math.Abs(u.Rate-416.0/120) > 1e-9 {
		t.Errorf("update leases over the run: %+v, want 400 ok, 16 errors, 416 in 120 s", u)
	}
	if c := fleet["create nodes"]; c.OK != 8 || c.Errors != 0 {
		t.Errorf("create nodes over the run: %+v, want 8 ok", c)
	}
	if g := fleet["get leases"]; g.OK != 8 || g.Errors != 0 {
		t.Errorf("get leases over the run: %+v, want 8 ok", g)
	}
	var cpu float64
	for _, pr := range r.Load.Run.Processes {
		if pr.Component == load.Fleet {
			cpu = pr.CPUSeconds
		}
	}
	if cpu != 8+5+1+2 { // a: 1 -> 9; b: 0 -> 5, restart at 1, -> 3
		t.Errorf("the shards' CPU-seconds: %v, want 16", cpu)
	}
	// The outage's 3 stops and 3 reactions: 1 in (30, 45], 2 in (45, 60]; p50 at rank 1.5 is
	// 45 + 15 x 0.5/2. The steady phase has none.
	src := r.Source
	if len(src.Actions) != 1 || src.Actions[0] != (record.ActionCount{Phase: "outage", Op: "stop", Group: "victims", Count: 3}) {
		t.Errorf("actions %+v, want 3 stops of victims in outage", src.Actions)
	}
	if len(src.Reactions) != 1 || src.Reactions[0].Phase != "outage" || src.Reactions[0].Count != 3 || src.Reactions[0].P50 != 48.75 {
		t.Errorf("reactions %+v, want 3 ready_unknown of victims in outage, p50 48.75", src.Reactions)
	}
	if len(src.Missed) != 1 || src.Missed[0].Count != 1 || src.Missed[0].Event != "taint_unreachable_noexecute_added" {
		t.Errorf("missed %+v, want 1 taint_unreachable_noexecute_added", src.Missed)
	}
	var text, page strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"reactions from Prometheus", "ready_unknown  action  3      48.8", "never came (over the run): taint_unreachable_noexecute_added of victims, 1", "note: Reactions per node are not in this report"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(page.String(), "Reactions from Prometheus") || !strings.Contains(page.String(), "Reactions per node are not in this report") {
		t.Error("report.html lacks the reactions from Prometheus or the notes")
	}
	if n := len(r.Nodes.Timeline); n == 0 || r.Nodes.Timeline[n-1].Ready != 8 {
		t.Errorf("node timeline %+v, want 8 Ready at the end", r.Nodes.Timeline)
	}
}

func TestReadErrors(t *testing.T) {
	empty := newFakeProm().server(t)
	closed := newFakeProm().server(t)
	closed.Close()
	for _, tc := range []struct {
		name, url string
		from, to  time.Time
		want      string
	}{
		{"unreachable", closed.URL, at(0), at(8), "does not answer"},
		{"to before from", empty.URL, at(8), at(0), "ends (2026-03-01T10:00:00Z) before it begins (2026-03-01T10:02:00Z)"},
		{"nothing scraped", empty.URL, at(0), at(8), "has no requests of job kube-apiserver or fakelet between 2026-03-01T10:00:00Z and 2026-03-01T10:02:00Z"},
	} {
		_, err := Read(context.Background(), queryAPI(t, tc.url), Options{URL: tc.url, From: tc.from, To: tc.to})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func samePhases(a, b []reaction.Phase) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !a[i].Start.Equal(b[i].Start) || !a[i].End.Equal(b[i].End) {
			return false
		}
	}
	return true
}
