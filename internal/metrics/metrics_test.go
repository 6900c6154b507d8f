package metrics

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
)

// documented is every metric of fakelet's own with its type, as docs/metrics.md lists them.
var documented = map[string]dto.MetricType{
	"fakelet_nodes":                            dto.MetricType_GAUGE,
	"fakelet_fleet_nodes":                      dto.MetricType_GAUGE,
	"fakelet_connections_open":                 dto.MetricType_GAUGE,
	"fakelet_connections_dialed_total":         dto.MetricType_COUNTER,
	"fakelet_heartbeats_total":                 dto.MetricType_COUNTER,
	"fakelet_request_duration_seconds":         dto.MetricType_HISTOGRAM,
	"fakelet_request_bytes_total":              dto.MetricType_COUNTER,
	"fakelet_response_bytes_total":             dto.MetricType_COUNTER,
	"fakelet_lease_renewal_interval_seconds":   dto.MetricType_HISTOGRAM,
	"fakelet_heartbeat_send_lag_seconds":       dto.MetricType_HISTOGRAM,
	"fakelet_watches":                          dto.MetricType_GAUGE,
	"fakelet_watch_lists_total":                dto.MetricType_COUNTER,
	"fakelet_watch_opens_total":                dto.MetricType_COUNTER,
	"fakelet_watch_events_received_total":      dto.MetricType_COUNTER,
	"fakelet_profile_info":                     dto.MetricType_GAUGE,
	"fakelet_profile_phase_start_time_seconds": dto.MetricType_GAUGE,
	"fakelet_actions_total":                    dto.MetricType_COUNTER,
	"fakelet_reaction_latency_seconds":         dto.MetricType_HISTOGRAM,
	"fakelet_reactions_missed_total":           dto.MetricType_COUNTER,
	"fakelet_pod_startup_latency_seconds":      dto.MetricType_HISTOGRAM,
	"fakelet_workload_reaction_seconds":        dto.MetricType_GAUGE,
	"fakelet_workload_pods_lost":               dto.MetricType_GAUGE,
}

// exercised returns metrics on which every method was called once, so that every metric has a series.
func exercised(t testing.TB, opts Options) *Metrics {
	t.Helper()
	m := New(opts)
	r := fleet.NewTally(0)
	r.Request(agent.Request{Verb: "update", Resource: "leases", Latency: 3 * time.Millisecond, RequestBytes: 280, ResponseBytes: 290})
	r.Request(agent.Request{Verb: "get", Resource: "nodes", Err: errors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "fakelet-00001"), Latency: time.Millisecond, ResponseBytes: 180})
	r.Heartbeat(agent.KindLease, nil)
	r.Heartbeat(agent.KindStatus, errors.NewTooManyRequests("slow down", 1))
	r.LeaseRenewed(10200 * time.Millisecond)
	watch(r, "pods", true, scriptedWatch{events: 1})
	m.SetPhase("stop-10pct", "outage")
	m.ActionApplied("stop", "victims")
	m.ObserveReaction("ready_unknown", "victims", FromLastRenewal, 52*time.Second)
	m.ReactionMissed("ready_unknown", "victims")
	m.ObservePodStartup("pod_startup", 1.5)
	m.SetWorkloadReaction("stop", "victims", "evicted", 80, 85, 90)
	m.SetWorkloadPodsLost("stop", "victims", 0)
	m.RegisterFleet(connectedFakeFleet{fakeFleet{name: "fakelet", p: fleet.Progress{Nodes: 10, Started: 10, Registered: 9, Ready: 7, Failed: 1}, t: r},
		fleet.Connections{Mode: fleet.ConnectionsShared, Open: 2, Dialed: 2}})
	return m
}

func TestRegistryExposesDocumentedMetrics(t *testing.T) {
	m := exercised(t, Options{})
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]dto.MetricType{}
	for _, f := range families {
		got[f.GetName()] = f.GetType()
	}
	for name, typ := range documented {
		if g, ok := got[name]; !ok {
			t.Errorf("%s (%v) not exposed", name, typ)
		} else if g != typ {
			t.Errorf("%s is a %v, documented as a %v", name, g, typ)
		}
	}
	for name := range got {
		if _, ok := documented[name]; !ok && strings.HasPrefix(name, namespace+"_") {
			t.Errorf("%s is exposed but not documented", name)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if _, ok := got[name]; !ok {
			t.Errorf("runtime or process metric %s not exposed", name)
		}
	}
}

func TestMetricsFollowConventions(t *testing.T) {
	m := exercised(t, Options{NoProcessCollectors: true})
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestExposition(t *testing.T) {
	m := exercised(t, Options{NoProcessCollectors: true, Clock: testingclock.NewFakePassiveClock(time.Unix(1700000000, 500e6))})
	want := `
# HELP fakelet_heartbeats_total Heartbeat attempts of the fleet's nodes by kind (lease renewal or status patch) and result.
# TYPE fakelet_heartbeats_total counter
fakelet_heartbeats_total{kind="lease",result="failure"} 0
fakelet_heartbeats_total{kind="lease",result="success"} 1
fakelet_heartbeats_total{kind="status",result="failure"} 1
fakelet_heartbeats_total{kind="status",result="success"} 0
# HELP fakelet_nodes The fleet's nodes by state, read from the fleet at scrape time; states overlap (registered = ready + not_ready).
# TYPE fakelet_nodes gauge
fakelet_nodes{fleet="fakelet",state="failed"} 1
fakelet_nodes{fleet="fakelet",state="not_ready"} 2
fakelet_nodes{fleet="fakelet",state="ready"} 7
fakelet_nodes{fleet="fakelet",state="registered"} 9
fakelet_nodes{fleet="fakelet",state="started"} 10
# HELP fakelet_fleet_nodes Nodes the fleet runs (its --nodes).
# TYPE fakelet_fleet_nodes gauge
fakelet_fleet_nodes{fleet="fakelet"} 10
# HELP fakelet_profile_info The profile and phase running now: always 1, one series at a time.
# TYPE fakelet_profile_info gauge
fakelet_profile_info{phase="outage",profile="stop-10pct"} 1
# HELP fakelet_profile_phase_start_time_seconds Unix time at which the current profile phase started.
# TYPE fakelet_profile_phase_start_time_seconds gauge
fakelet_profile_phase_start_time_seconds 1.7000000005e+09
# HELP fakelet_actions_total Profile ops applied to nodes, by op and group: one per node and op.
# TYPE fakelet_actions_total counter
fakelet_actions_total{group="victims",op="stop"} 1
# HELP fakelet_reactions_missed_total Expected reactions that did not come within their phase, by reaction event and group.
# TYPE fakelet_reactions_missed_total counter
fakelet_reactions_missed_total{event="ready_unknown",group="victims"} 1
# HELP fakelet_request_bytes_total Body bytes of the fleet's API requests, client-go's retries included, by verb, resource and HTTP status code.
# TYPE fakelet_request_bytes_total counter
fakelet_request_bytes_total{code="200",resource="leases",verb="update"} 280
fakelet_request_bytes_total{code="404",resource="nodes",verb="get"} 0
# HELP fakelet_response_bytes_total Body bytes of the answers to the fleet's API requests, client-go's retries included, by verb, resource and HTTP status code.
# TYPE fakelet_response_bytes_total counter
fakelet_response_bytes_total{code="200",resource="leases",verb="update"} 290
fakelet_response_bytes_total{code="404",resource="nodes",verb="get"} 180
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"fakelet_heartbeats_total", "fakelet_nodes", "fakelet_fleet_nodes", "fakelet_profile_info",
		"fakelet_profile_phase_start_time_seconds", "fakelet_actions_total", "fakelet_reactions_missed_total",
		"fakelet_request_bytes_total", "fakelet_response_bytes_total"); err != nil {
		t.Error(err)
	}
	// Only the requests that happened are exposed, with their codes.
	got := seriesOf(t, m, "fakelet_request_duration_seconds")
	want2 := []string{`code="200",resource="leases",verb="update"`, `code="404",resource="nodes",verb="get"`}
	if !slices.Equal(got, want2) {
		t.Errorf("request series %q, want %q", got, want2)
	}
}

// seriesOf returns the label sets of family name, each as k="v" pairs sorted by name, sorted.
func seriesOf(t *testing.T, m *Metrics, name string) []string {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			var pairs []string
			for _, lp := range metric.GetLabel() {
				pairs = append(pairs, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			slices.Sort(pairs)
			out = append(out, strings.Join(pairs, ","))
		}
	}
	slices.Sort(out)
	return out
}

func TestSetPhaseKeepsOneSeries(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Unix(100, 0))
	m := New(Options{NoProcessCollectors: true, Clock: clk})
	m.SetPhase("flap", "warmup")
	clk.SetTime(clk.Now().Add(time.Minute))
	m.SetPhase("flap", "flapping")
	want := `
# HELP fakelet_profile_info The profile and phase running now: always 1, one series at a time.
# TYPE fakelet_profile_info gauge
fakelet_profile_info{phase="flapping",profile="flap"} 1
# HELP fakelet_profile_phase_start_time_seconds Unix time at which the current profile phase started.
# TYPE fakelet_profile_phase_start_time_seconds gauge
fakelet_profile_phase_start_time_seconds 160
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "fakelet_profile_info", "fakelet_profile_phase_start_time_seconds"); err != nil {
		t.Error(err)
	}
}

func TestReactionLatency(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	m.ObserveReaction("ready_unknown", "victims", FromAction, 3*time.Second)
	m.ObserveReaction("ready_unknown", "victims", FromLastRenewal, 53*time.Second)
	m.ObserveReaction("ready_unknown", "victims", FromLastRenewal, 54*time.Second)
	if n := testutil.CollectAndCount(m.reactions); n != 2 {
		t.Fatalf("%d reaction series, want 2 (one per reference)", n)
	}
	h := gatherHistogram(t, m, "fakelet_reaction_latency_seconds", "from", FromLastRenewal)
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 107 {
		t.Errorf("last_renewal: count %d sum %v, want 2 and 107", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == 55 && b.GetCumulativeCount() != 2 || b.GetUpperBound() == 50 && b.GetCumulativeCount() != 0 {
			t.Errorf("bucket le=%v holds %d", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
}

// gatherHistogram returns the histogram of family name whose label has value.
func gatherHistogram(t *testing.T, m *Metrics, name, label, value string) *dto.Histogram {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, lp := range metric.GetLabel() {
				if label == "" || lp.GetName() == label && lp.GetValue() == value {
					return metric.GetHistogram()
				}
			}
			if label == "" {
				return metric.GetHistogram()
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, label, value)
	return nil
}

type fakeFleet struct {
	name string
	p    fleet.Progress
	t    *fleet.Tally
}

func (f fakeFleet) Progress() fleet.Progress { return f.p }
func (f fakeFleet) Config() fleet.Config     { return fleet.Config{Fleet: f.name} }
func (f fakeFleet) Tally() *fleet.Tally      { return f.t }

func TestFleetsOfOneNameAreSummed(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	m.RegisterFleet(fakeFleet{"a", fleet.Progress{Nodes: 5, Started: 5, Registered: 5, Ready: 5}, nil})
	m.RegisterFleet(fakeFleet{"a", fleet.Progress{Nodes: 5, Started: 3, Registered: 2, Ready: 1}, nil})
	m.RegisterFleet(fakeFleet{"b", fleet.Progress{Nodes: 1}, nil})
	want := `
# HELP fakelet_nodes The fleet's nodes by state, read from the fleet at scrape time; states overlap (registered = ready + not_ready).
# TYPE fakelet_nodes gauge
fakelet_nodes{fleet="a",state="failed"} 0
fakelet_nodes{fleet="a",state="not_ready"} 1
fakelet_nodes{fleet="a",state="ready"} 6
fakelet_nodes{fleet="a",state="registered"} 7
fakelet_nodes{fleet="a",state="started"} 8
fakelet_nodes{fleet="b",state="failed"} 0
fakelet_nodes{fleet="b",state="not_ready"} 0
fakelet_nodes{fleet="b",state="ready"} 0
fakelet_nodes{fleet="b",state="registered"} 0
fakelet_nodes{fleet="b",state="started"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "fakelet_nodes"); err != nil {
		t.Error(err)
	}
}

// Every fleet's tally is read at each scrape and summed: shards of a fleet in one process are one
// series each.
func TestTalliesAreSummed(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	a, b := fleet.NewTally(0), fleet.NewTally(0)
	a.Request(agent.Request{Verb: "update", Resource: "leases", Latency: 3 * time.Millisecond, RequestBytes: 100, ResponseBytes: 10})
	b.Request(agent.Request{Verb: "update", Resource: "leases", Latency: 20 * time.Second, RequestBytes: 200, ResponseBytes: 20})
	a.LeaseRenewed(10120 * time.Millisecond)
	b.LeaseRenewed(10380 * time.Millisecond)
	m.RegisterFleet(fakeFleet{"a", fleet.Progress{}, a})
	m.RegisterFleet(fakeFleet{"b", fleet.Progress{}, b})
	h := gatherHistogram(t, m, "fakelet_request_duration_seconds", "verb", "update")
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 20.003 {
		t.Errorf("request histogram count %d sum %v, want 2 and 20.003", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, bk := range h.GetBucket() {
		if want := map[bool]uint64{true: 1, false: 0}[bk.GetUpperBound() >= 0.004]; bk.GetCumulativeCount() != want {
			t.Errorf("request le=%v holds %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), want)
		}
	}
	r := gatherHistogram(t, m, "fakelet_lease_renewal_interval_seconds", "", "")
	for _, bk := range r.GetBucket() {
		var want uint64
		switch {
		case bk.GetUpperBound() >= 10.4:
			want = 2
		case bk.GetUpperBound() >= 10.15:
			want = 1
		}
		if bk.GetCumulativeCount() != want {
			t.Errorf("renewal le=%v holds %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), want)
		}
	}
	want := `
# HELP fakelet_request_bytes_total Body bytes of the fleet's API requests, client-go's retries included, by verb, resource and HTTP status code.
# TYPE fakelet_request_bytes_total counter
fakelet_request_bytes_total{code="200",resource="leases",verb="update"} 300
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "fakelet_request_bytes_total"); err != nil {
		t.Error(err)
	}
}

// The send lag counts the first request of each due tick, summed over the fleets' tallies.
func TestSendLagOfTalliesIsSummed(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	a, b := fleet.NewTally(0), fleet.NewTally(0)
	due := time.Unix(1000, 0)
	a.Request(agent.Request{Verb: "update", Resource: "leases", Due: due, SendLag: 3 * time.Millisecond})
	b.Request(agent.Request{Verb: "update", Resource: "leases", Due: due, SendLag: 3 * time.Second})
	b.Request(agent.Request{Verb: "get", Resource: "leases", SendLag: time.Hour}) // not a tick's first: no lag
	m.RegisterFleet(fakeFleet{"a", fleet.Progress{}, a})
	m.RegisterFleet(fakeFleet{"b", fleet.Progress{}, b})
	lag := gatherHistogram(t, m, "fakelet_heartbeat_send_lag_seconds", "", "")
	if lag.GetSampleCount() != 2 || lag.GetSampleSum() != 3.003 {
		t.Errorf("send lag histogram count %d sum %v, want 2 and 3.003", lag.GetSampleCount(), lag.GetSampleSum())
	}
	for _, bk := range lag.GetBucket() {
		var want uint64
		switch {
		case bk.GetUpperBound() >= 5:
			want = 2
		case bk.GetUpperBound() >= 0.005:
			want = 1
		}
		if bk.GetCumulativeCount() != want {
			t.Errorf("send lag le=%v holds %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), want)
		}
	}
}

// docs/metrics.md has a row for every metric, with its type, and no row for a metric that is not.
func TestDocsListEveryMetric(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(fakelet_[a-z_]+)` \\| (gauge|counter|histogram) \\|")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		rows[m[1]] = m[2]
	}
	for name, typ := range documented {
		if got, ok := rows[name]; !ok {
			t.Errorf("docs/metrics.md has no row for %s", name)
		} else if want := strings.ToLower(typ.String()); got != want {
			t.Errorf("docs/metrics.md says %s is a %s, it is a %s", name, got, want)
		}
	}
	for name := range rows {
		if _, ok := documented[name]; !ok {
			t.Errorf("docs/metrics.md documents %s, which fakelet does not expose", name)
		}
	}
}

// connectedFakeFleet is a fakeFleet that counts its connections, as *fleet.Fleet does.
type connectedFakeFleet struct {
	fakeFleet
	c fleet.Connections
}

func (f connectedFakeFleet) Connections() fleet.Connections { return f.c }

// TestConnectionsAreCounted: the agents' connections open and dialed, by fleet and connection mode,
// summed over the fleets of one name; fleets that count none have no series.
func TestConnectionsAreCounted(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	m.RegisterFleet(connectedFakeFleet{fakeFleet{name: "a"}, fleet.Connections{Mode: fleet.ConnectionsPerNode, Open: 500, Dialed: 502}})
	m.RegisterFleet(connectedFakeFleet{fakeFleet{name: "a"}, fleet.Connections{Mode: fleet.ConnectionsPerNode, Open: 499, Dialed: 499}})
	m.RegisterFleet(fakeFleet{name: "b"})
	want := `
# HELP fakelet_connections_open TCP connections the fleet's agents hold to the apiserver (the fleet's own client's not included).
# TYPE fakelet_connections_open gauge
fakelet_connections_open{fleet="a",mode="per-node"} 999
# HELP fakelet_connections_dialed_total TCP connections the fleet's agents opened to the apiserver, each with its TLS handshake.
# TYPE fakelet_connections_dialed_total counter
fakelet_connections_dialed_total{fleet="a",mode="per-node"} 1001
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "fakelet_connections_open", "fakelet_connections_dialed_total"); err != nil {
		t.Error(err)
	}
}
