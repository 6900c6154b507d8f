package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"testing"
	"time"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/deploy"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/metrics"
)

// TestPrometheusScrapesFleetAndControlPlane starts a real Prometheus server beside the shared
// control plane with deploy/prometheus's configuration, runs 100 nodes with fakelet's metrics served
// until Prometheus holds a minute of their steady renewals, and reads through Prometheus's HTTP API
// what the fleet and the apiserver report: the same lease PUT rate, about nodes / 10.2 s, from both
// sides.
func TestPrometheusScrapesFleetAndControlPlane(t *testing.T) {
	cp := controlPlane(t)
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Fatalf("this test needs a Prometheus server: %v; install Debian's prometheus package (apt-get install prometheus), as .ci/run does", err)
	}
	m := metrics.New(metrics.Options{})
	srv, err := metrics.Serve("127.0.0.1:0", m, metrics.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cp.StartPrometheus(ctx, controlplane.PrometheusOptions{FakeletTargets: []string{srv.Addr()}, FreshData: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.StopPrometheus(context.Background()); err != nil {
			t.Errorf("stop Prometheus: %v", err)
		}
	})
	prom := &promAPI{base: cp.PrometheusURL()}

	// 10 nodes a second spreads the renewals over the 10 s period, as a real cluster's kubelets are:
	// 100 nodes started at once renew in bursts that a 15 s scrape aliases.
	const nodes = 100
	began := time.Now()
	rf := startFleet(t, fleet.Config{Nodes: nodes, Fleet: "prom", NamePrefix: "prom", RegisterQPS: 10})
	m.RegisterFleet(rf.Fleet)
	// What a profile and the measurements would record, so that every metric has a series.
	m.SetPhase("e2e", "steady")
	m.ActionApplied("start", "all")
	m.ObserveReaction("ready_true", "all", metrics.FromAction, 2*time.Second)
	m.ReactionMissed("ready_true", "all")
	rf.waitReady(t, nodes, 90*time.Second)
	// Every [1m] rate below must hold steady renewals only, from after the last node's start: wait
	// until every job's last scrape, and the recording rules' last evaluation, is a minute past it.
	steady := float64(time.Now().Add(time.Minute+time.Second).UnixMilli()) / 1000
	eventually(t, 2*time.Minute, "every scrape and rule evaluation a minute after the last node Ready", func() (bool, error) {
		for _, q := range []string{`min(timestamp(up))`, `min(timestamp(fakelet:lease_updates:rate1m))`, `min(timestamp(apiserver:lease_puts:rate1m))`} {
			if at, ok := prom.sample(t, q); !ok || at < steady {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("%v after the first start", time.Since(began).Round(time.Second))

	for _, job := range []string{deploy.JobFakelet, deploy.JobEtcd, deploy.JobAPIServer, deploy.JobControllerManager, deploy.JobScheduler, deploy.JobPrometheus} {
		if v := prom.value(t, fmt.Sprintf(`up{job=%q}`, job)); v != 1 {
			t.Errorf("job %s: up = %v", job, v)
		}
	}
	want := nodes / 10.2 // renewals every 10.0-10.4 s
	fleetRate := prom.value(t, `sum(rate(fakelet_request_duration_seconds_count{verb="update",resource="leases",code="200"}[1m]))`)
	apiRate := prom.value(t, `sum(rate(apiserver_request_total{verb="PUT",resource="leases",code="200"}[1m]))`)
	t.Logf("lease PUTs per second: fakelet %.2f, kube-apiserver %.2f, expected %.2f", fleetRate, apiRate, want)
	// The apiserver also renews its own identity lease (one PUT every 10 s).
	if fleetRate < 0.8*want || fleetRate > 1.2*want || apiRate < 0.8*want || apiRate > 1.2*want+0.2 {
		t.Errorf("lease PUT rate: fakelet %.2f/s, kube-apiserver %.2f/s; want both about %.2f/s", fleetRate, apiRate, want)
	}
	// The fleet's request bytes are the bodies the apiserver read for the same PUTs (it also renews
	// its own and the controller-manager's leases, a few percent more); the answer to a lease PUT is
	// the lease written, about as long. (The apiserver measures response sizes of reads only.)
	sent := prom.value(t, `sum(rate(fakelet_request_bytes_total{verb="update",resource="leases"}[1m]))`)
	read := prom.value(t, `sum(rate(apiserver_request_body_size_bytes_sum{verb="update",resource=~"leases.*"}[1m]))`)
	received := prom.value(t, `sum(rate(fakelet_response_bytes_total{verb="update",resource="leases"}[1m]))`)
	t.Logf("lease PUT bodies: fakelet sent %.0f B/s and received %.0f B/s, kube-apiserver read %.0f B/s", sent, received, read)
	if sent <= 0 || sent < 0.7*read || sent > 1.05*read {
		t.Errorf("fakelet sent %.0f B/s of lease PUTs, the apiserver read %.0f B/s: want 70-105%%", sent, read)
	}
	if received < 0.8*sent || received > 1.25*sent {
		t.Errorf("fakelet received %.0f B/s for the %.0f B/s of lease PUTs it sent: want 80-125%%", received, sent)
	}
	for _, c := range []struct {
		query    string
		min, max float64
	}{
		{`fakelet_nodes{fleet="prom",state="ready"}`, nodes, nodes},
		{`fakelet_nodes{fleet="prom",state="failed"}`, 0, 0},
		{`fakelet_fleet_nodes{fleet="prom"}`, nodes, nodes},
		{`fakelet_heartbeats_total{kind="lease",result="failure"}`, 0, 0},
		{`fakelet_heartbeats_total{kind="lease",result="success"}`, 5 * nodes, 10 * nodes},
		{`histogram_quantile(0.5, sum by (le) (rate(fakelet_lease_renewal_interval_seconds_bucket[1m])))`, 10, 10.6},
		{`histogram_quantile(0.5, sum by (le) (rate(fakelet_request_duration_seconds_bucket{verb="update",resource="leases"}[1m])))`, 0, 1},
		{`sum(rate(apiserver_flowcontrol_dispatched_requests_total{priority_level="node-high"}[1m]))`, 0.8 * want, 2 * want},
		{`histogram_quantile(0.99, sum by (le) (rate(apiserver_request_duration_seconds_bucket{verb="PUT",resource="leases"}[1m])))`, 0, 1},
		{`etcd_mvcc_db_total_size_in_bytes`, 1 << 10, 1 << 30},
		{`sum(node_collector_zone_size)`, nodes, 2 * nodes},
		{`rate(process_cpu_seconds_total{job="fakelet"}[1m])`, 0.0001, 2},
		{`fakelet_profile_info{profile="e2e",phase="steady"}`, 1, 1},
		// The recording rules are loaded and evaluated.
		{`fakelet:lease_updates:rate1m`, 0.7 * want, 1.3 * want},
		{`apiserver:lease_puts:rate1m`, 0.7 * want, 1.3*want + 0.2},
		{`sum(fakelet:nodes:sum{fleet="prom",state="ready"})`, nodes, nodes},
	} {
		if v := prom.value(t, c.query); v < c.min || v > c.max {
			t.Errorf("%s = %v, want %v..%v", c.query, v, c.min, c.max)
		}
	}

	// Every metric the dashboard and the rules query exists in this Prometheus, but those that
	// appear only after a rare event.
	names := map[string]bool{}
	for _, n := range prom.names(t) {
		names[n] = true
	}
	firstUse := []string{"apiserver_flowcontrol_rejected_requests_total", "node_collector_evictions_total"}
	queries, err := deploy.Queries()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		for _, name := range deploy.MetricNames(q.Expr) {
			if !names[name] && !slices.Contains(firstUse, name) {
				t.Errorf("%s: no series of %s in Prometheus", q.Where, name)
			}
		}
	}
}

// promAPI queries a Prometheus server's HTTP API.
type promAPI struct{ base string }

func (p *promAPI) get(t *testing.T, path string, params url.Values, into any) {
	t.Helper()
	resp, err := http.Get(p.base + path + "?" + params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if r.Status != "success" {
		t.Fatalf("GET %s %v: %s", path, params, r.Error)
	}
	if err := json.Unmarshal(r.Data, into); err != nil {
		t.Fatal(err)
	}
}

// value runs an instant query that must return one sample, and returns its value.
func (p *promAPI) value(t *testing.T, query string) float64 {
	t.Helper()
	vs := p.query(t, query)
	if len(vs) != 1 {
		t.Errorf("%s: %d samples, want 1", query, len(vs))
		return -1
	}
	var v float64
	if s, ok := vs[0][1].(string); !ok {
		t.Errorf("%s: value %v", query, vs[0])
	} else if _, err := fmt.Sscan(s, &v); err != nil {
		t.Errorf("%s: value %q: %v", query, s, err)
	}
	return v
}

// sample runs an instant query and returns its one sample's value, or false while it has none.
func (p *promAPI) sample(t *testing.T, query string) (float64, bool) {
	t.Helper()
	vs := p.query(t, query)
	if len(vs) != 1 {
		return 0, false
	}
	var v float64
	s, ok := vs[0][1].(string)
	if _, err := fmt.Sscan(s, &v); !ok || err != nil {
		return 0, false
	}
	return v, true
}

// query runs an instant query and returns its samples, each a time and a value.
func (p *promAPI) query(t *testing.T, query string) [][2]any {
	t.Helper()
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	p.get(t, "/api/v1/query", url.Values{"query": {query}}, &data)
	vs := make([][2]any, len(data.Result))
	for i, r := range data.Result {
		vs[i] = r.Value
	}
	return vs
}

// names returns every metric name Prometheus holds.
func (p *promAPI) names(t *testing.T) []string {
	t.Helper()
	var names []string
	p.get(t, "/api/v1/label/__name__/values", url.Values{}, &names)
	return names
}
