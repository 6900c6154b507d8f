package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/metrics"
)

// TestDashboardIsValid checks what Grafana needs to import the dashboard: its identity and schema
// version, a Prometheus datasource variable, and panels with unique ids, a place on the 24-column
// grid, and (but rows) a datasource and targets with a refId and an expression.
func TestDashboardIsValid(t *testing.T) {
	var d map[string]any
	if err := json.Unmarshal(GrafanaDashboard, &d); err != nil {
		t.Fatalf("grafana/fakelet.json is not JSON: %v", err)
	}
	for _, field := range []string{"uid", "title", "schemaVersion", "panels", "templating", "time", "annotations"} {
		if _, ok := d[field]; !ok {
			t.Errorf("dashboard has no %s", field)
		}
	}
	if v, _ := d["schemaVersion"].(float64); v < 36 {
		t.Errorf("schemaVersion %v: want 36 or later (datasources as objects)", d["schemaVersion"])
	}
	if uid, _ := d["uid"].(string); uid == "" || len(uid) > 40 {
		t.Errorf("uid %q: Grafana wants 1-40 characters", uid)
	}
	if _, ok := d["id"]; ok {
		t.Error("dashboard has an id: an import would overwrite whatever dashboard has it")
	}
	var variables []string
	for _, v := range list(d, "templating") {
		vm := v.(map[string]any)
		variables = append(variables, vm["name"].(string))
		if vm["name"] == "datasource" && (vm["type"] != "datasource" || vm["query"] != "prometheus") {
			t.Errorf("variable datasource is %v of %v, want a prometheus datasource variable", vm["type"], vm["query"])
		}
	}
	if !slices.Contains(variables, "datasource") {
		t.Error("no datasource variable: the dashboard would be tied to one Prometheus")
	}

	panels, _ := d["panels"].([]any)
	if len(panels) == 0 {
		t.Fatal("no panels")
	}
	ids := map[float64]string{}
	for i, p := range panels {
		pm, ok := p.(map[string]any)
		if !ok {
			t.Fatalf("panel %d is not an object", i)
		}
		title, _ := pm["title"].(string)
		id, ok := pm["id"].(float64)
		if !ok {
			t.Errorf("panel %q has no id", title)
		} else if other, dup := ids[id]; dup {
			t.Errorf("panels %q and %q share id %v", other, title, id)
		}
		ids[id] = title
		if title == "" || pm["type"] == nil {
			t.Errorf("panel %v has no title or type", id)
		}
		g, _ := pm["gridPos"].(map[string]any)
		if g == nil || g["x"].(float64)+g["w"].(float64) > 24 || g["h"].(float64) <= 0 {
			t.Errorf("panel %q: gridPos %v outside the 24 columns", title, g)
		}
		if pm["type"] == "row" {
			continue
		}
		if ds := checkDatasource(pm["datasource"]); ds != "" {
			t.Errorf("panel %q: %s", title, ds)
		}
		targets, _ := pm["targets"].([]any)
		if len(targets) == 0 {
			t.Errorf("panel %q has no targets", title)
		}
		refs := map[string]bool{}
		for _, tg := range targets {
			tm := tg.(map[string]any)
			ref, _ := tm["refId"].(string)
			expr, _ := tm["expr"].(string)
			if ref == "" || refs[ref] || strings.TrimSpace(expr) == "" {
				t.Errorf("panel %q: target %q has a missing or repeated refId or no expr", title, ref)
			}
			refs[ref] = true
			if ds := checkDatasource(tm["datasource"]); ds != "" {
				t.Errorf("panel %q target %s: %s", title, ref, ds)
			}
		}
	}
}

func list(d map[string]any, key string) []any {
	m, _ := d[key].(map[string]any)
	l, _ := m["list"].([]any)
	return l
}

func checkDatasource(ds any) string {
	m, ok := ds.(map[string]any)
	if !ok || m["type"] != "prometheus" || m["uid"] != "${datasource}" {
		return `datasource is not {"type": "prometheus", "uid": "${datasource}"}`
	}
	return ""
}

// TestQueriedMetricsExist checks every metric name of the dashboard and the recording rules against
// fakelet's registry, the control plane's metric list (testdata/controlplane-metrics.txt) and the
// recording rules.
func TestQueriedMetricsExist(t *testing.T) {
	known := fakeletFamilies(t)
	for name := range controlPlaneFamilies(t) {
		known[name] = true
	}
	rules, err := RecordingRules()
	if err != nil {
		t.Fatal(err)
	}
	for name := range rules {
		if strings.Count(name, ":") != 2 {
			t.Errorf("recording rule %s is not named level:metric:operations", name)
		}
		known[name] = true
	}
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, q := range qs {
		names := MetricNames(q.Expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %s", q.Where, q.Expr)
		}
		for _, name := range names {
			used[name] = true
			if !known[FamilyName(name, known)] {
				t.Errorf("%s: %s is neither fakelet's, nor the control plane's, nor a recording rule", q.Where, name)
			}
		}
	}
	// Everything fakelet exposes of its own is on the dashboard or in a rule.
	for name := range fakeletFamilies(t) {
		if strings.HasPrefix(name, "fakelet_") && !used[name] && !used[name+"_bucket"] && !used[name+"_count"] {
			t.Errorf("fakelet's %s is on no dashboard panel and in no rule", name)
		}
	}
}

// fakeletFamilies returns the metric families of fakelet's registry, each method called once so
// that every family has a series.
func fakeletFamilies(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New(metrics.Options{})
	r := fleet.NewTally(0)
	r.Request(agent.Request{Verb: "update", Resource: "leases", Latency: time.Millisecond, RequestBytes: 1, ResponseBytes: 1})
	r.Heartbeat(agent.KindLease, nil)
	r.LeaseRenewed(10 * time.Second)
	m.SetPhase("p", "q")
	m.ActionApplied("stop", "g")
	m.ObserveReaction("ready_unknown", "g", metrics.FromAction, time.Second)
	m.ReactionMissed("ready_unknown", "g")
	m.RegisterFleet(staticFleet{r})
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	return names
}

type staticFleet struct{ t *fleet.Tally }

func (staticFleet) Progress() fleet.Progress { return fleet.Progress{Nodes: 1} }
func (staticFleet) Config() fleet.Config     { return fleet.Config{Fleet: "f"} }
func (f staticFleet) Tally() *fleet.Tally    { return f.t }

// controlPlaneFamilies reads testdata/controlplane-metrics.txt: component, type and name per line.
func controlPlaneFamilies(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("testdata/controlplane-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 3 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		names[fields[2]] = true
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (kind, result) (rate(fakelet_heartbeats_total[$__rate_interval]))`, []string{"fakelet_heartbeats_total"}},
		{`histogram_quantile(0.99, sum by (verb, le) (rate(apiserver_request_duration_seconds_bucket{verb!~"WATCH|CONNECT"}[1m])))`, []string{"apiserver_request_duration_seconds_bucket"}},
		{`sum(rate(a_total{job="fakelet"}[1m])) / sum(rate(b_total{job="x", le="1e9"}[1m]))`, []string{"a_total", "b_total"}},
		{`sum(fakelet_nodes{state="started"}) / 10.2 + 1e3`, []string{"fakelet_nodes"}},
		{`(changes(x[1m]) > 0) * on (instance) group_left (phase) fakelet_profile_info`, []string{"fakelet_profile_info", "x"}},
		{`fakelet:lease_updates:rate1m / apiserver:lease_puts:rate1m offset 5m`, []string{"apiserver:lease_puts:rate1m", "fakelet:lease_updates:rate1m"}},
		{`max without (instance) (up) or vector(0)`, []string{"up"}},
	} {
		if got := MetricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("MetricNames(%s) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}
