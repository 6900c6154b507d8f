package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/report"
)

// promReportProfile is 150 nodes in three shards: a minute of steady renewals, then 6 stop.
const promReportProfile = `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: e2e-prom-report}
spec:
  nodes: 150
  zones: 1
  seed: 5
  groups:
    victims: {count: 6}
  phases:
  - {name: steady, duration: 60s}
  - name: outage
    duration: 20s
    actions:
    - {group: victims, do: stop}
`

// TestReportFromPrometheus: three `fakelet run --shard i/3` processes play one profile while a real
// Prometheus server (Debian's, with deploy/prometheus's configuration) scrapes them and the control
// plane; then `fakelet report --prometheus` over the run's window builds one report of the whole
// fleet, with report.html, and its phases and lease counts agree with the shards' own reports
// (merged with report.Merge): the totals a Prometheus server scraping the shards yields are the
// totals of the shards.
//
// Tolerances. Within the steady phase (60 s) both count the same counters over the same window,
// the shards' reports from scrapes at the phase's boundaries, Prometheus by interpolating its 15 s
// scrapes to them. With --register-qps 5 per shard the renewals spread over the 10.2 s renew
// period, about 15 a second at an even pace, so interpolation misses a few renewals: 10% (about
// 90 of 880) leaves room for scrape jitter on a loaded machine and nothing more. Over the whole
// run, Prometheus sees a shard's first requests only from its first scrape and its last up to its
// last scrape, one scrape interval at each end: up to 2 x 15 s x 150 / 10 s = 450 lease updates.
func TestReportFromPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cp := controlPlane(t)
	dir := t.TempDir()
	bin := fakeletBinary(t)
	profile := writeFile(t, dir, "profile.yaml", promReportProfile)
	addrs := startPrometheusForShards(t, cp, 3)
	startAt := time.Now().Add(35 * time.Second).UTC().Truncate(time.Second)
	shards := startShards(t, bin, 3, func(i int) []string {
		return []string{"run", "--kubeconfig", cp.Kubeconfig, "--profile", profile,
			"--shard", fmt.Sprintf("%d/3", i), "--start-at", startAt.Format(time.RFC3339), "--register-qps", "5",
			"--name-prefix", "e2epromrep", "--fleet", "e2e-prom-report", "--metrics-addr", addrs[i],
			"--out", filepath.Join(dir, fmt.Sprint("shard-", i))}
	})
	waitShards(t, shards, time.Until(startAt)+3*time.Minute)
	reports := shardReports(t, shards, 50)
	merged, err := report.Merge(reports)
	if err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "from-prometheus")
	cmd := exec.Command(bin, "report", "--prometheus", cp.PrometheusURL(), "--from", merged.Start.Format(time.RFC3339Nano),
		"--to", merged.End.Format(time.RFC3339Nano), "--out", out)
	text, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fakelet report --prometheus: %v\n%s", err, text)
	}
	t.Logf("fakelet report --prometheus:\n%s", text)
	prom, err := report.ReadFile(filepath.Join(out, report.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if page, err := os.ReadFile(filepath.Join(out, report.HTMLFile)); err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "Prometheus "+cp.PrometheusURL()) {
		t.Errorf("report.html: %v; charts %v, names its source %v", err, strings.Contains(string(page), "<svg"), strings.Contains(string(page), cp.PrometheusURL()))
	}

	// The phases, from fakelet_profile_info, begin when the first shard began them.
	if prom.Profile != "e2e-prom-report" || len(prom.Phases) != 2 || prom.Parameters.Nodes != 150 {
		t.Fatalf("from Prometheus: profile %q, phases %+v, %d nodes; want e2e-prom-report, steady and outage, 150", prom.Profile, prom.Phases, prom.Parameters.Nodes)
	}
	for i, p := range prom.Phases {
		m := merged.Phases[i]
		if p.Name != m.Name || p.Start.Sub(m.Start).Abs() > time.Second {
			t.Errorf("phase %d from Prometheus: %s at %s; the shards': %s at %s", i, p.Name, p.Start, m.Name, m.Start)
		}
	}

	within := func(what string, got, want, tol float64) {
		t.Helper()
		t.Logf("%s: from Prometheus %.0f, from the shards %.0f (tolerance %.0f)", what, got, want, tol)
		if want <= 0 || math.Abs(got-want) > tol {
			t.Errorf("%s: from Prometheus %.0f, from the shards %.0f; want within %.0f", what, got, want, tol)
		}
	}
	steady := merged.Load.Phases[0]
	fleetUpdates := func(p load.Phase) float64 {
		for _, f := range p.Fleet {
			if f.Verb == "update" && f.Resource == "leases" {
				return f.OK
			}
		}
		return 0
	}
	want := fleetUpdates(steady)
	within("lease updates the fleet sent in steady", fleetUpdates(prom.Load.Phases[0]), want, 0.1*want)
	apiPuts := func(p load.Phase) float64 {
		var n float64
		for _, r := range p.Requests {
			if r.Verb == "PUT" && r.Resource == "leases" && r.Code == "200" {
				n += r.Count
			}
		}
		return n
	}
	want = apiPuts(steady) // the control plane's load is the first shard's, as each scraped all of it
	within("lease PUTs the apiserver served in steady", apiPuts(prom.Load.Phases[0]), want, 0.1*want)
	// The outage (20 s) is shorter than a step (30 s): read over the step around it, it has requests.
	if n := apiPuts(prom.Load.Phases[1]); n <= 0 {
		t.Errorf("outage from Prometheus: %v lease PUTs, want its share of the step around it", n)
	} else {
		t.Logf("lease PUTs in outage: from Prometheus %.0f, from the shards %.0f", n, apiPuts(merged.Load.Phases[1]))
	}
	// The stops: the shards' own reports and Prometheus's sum of fakelet_actions_total agree.
	stops := 0
	for _, re := range merged.Reactions {
		if re.Op == "stop" && re.Event == "ready_unknown" {
			stops += re.Actions
		}
	}
	var promStops float64
	for _, a := range prom.Source.Actions {
		if a.Phase == "outage" && a.Op == "stop" && a.Group == "victims" {
			promStops += a.Count
		}
	}
	if stops != 6 || promStops != 6 {
		t.Errorf("stops in outage: the shards' reports %d, Prometheus %v; want 6 and 6", stops, promStops)
	}
	within("lease updates the fleet sent over the run", fleetUpdates(prom.Load.Run), fleetUpdates(merged.Load.Run), 2*15*150/10)
}
