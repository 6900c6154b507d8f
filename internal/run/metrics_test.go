package run

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
)

func TestStartMetrics(t *testing.T) {
	var log bytes.Buffer
	m, err := startMetrics(MetricsOptions{Addr: "127.0.0.1:0", Pprof: true}, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop(&log)
	url := "http://" + m.srv.Addr()
	if want := "metrics: " + url + "/metrics\npprof: " + url + "/debug/pprof/\n"; log.String() != want {
		t.Errorf("printed %q, want %q", log.String(), want)
	}
	tally := fleet.NewTally(0)
	tally.Request(agent.Request{Verb: "update", Resource: "leases", Latency: time.Millisecond, RequestBytes: 250})
	m.RegisterFleet(tallied{tally})
	for _, path := range []string{"/metrics", "/healthz", "/debug/pprof/"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, resp.Status)
		}
		if path == "/metrics" && (!strings.Contains(string(body), `fakelet_request_duration_seconds_count{code="200",resource="leases",verb="update"} 1`) ||
			!strings.Contains(string(body), `fakelet_request_bytes_total{code="200",resource="leases",verb="update"} 250`)) {
			t.Errorf("GET /metrics lacks the recorded request:\n%s", body)
		}
	}
}

// tallied is a fleet that has only a tally.
type tallied struct{ t *fleet.Tally }

func (tallied) Progress() fleet.Progress { return fleet.Progress{} }
func (tallied) Config() fleet.Config     { return fleet.Config{Fleet: "f"} }
func (f tallied) Tally() *fleet.Tally    { return f.t }

func TestStartMetricsDisabled(t *testing.T) {
	var log bytes.Buffer
	m, err := startMetrics(MetricsOptions{Addr: ""}, &log)
	if err != nil {
		t.Fatal(err)
	}
	m.stop(&log)
	m.SetPhase("p", "q") // a profile still may call it
	if log.Len() > 0 {
		t.Errorf("--metrics-addr=\"\" printed %q", log.String())
	}
	if _, err := startMetrics(MetricsOptions{Addr: "", Pprof: true}, &log); err == nil || !strings.Contains(err.Error(), "--pprof") {
		t.Errorf("--pprof without --metrics-addr: %v", err)
	}
}

func TestStartMetricsBusyAddress(t *testing.T) {
	m, err := startMetrics(MetricsOptions{Addr: "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop(io.Discard)
	if _, err := startMetrics(MetricsOptions{Addr: m.srv.Addr()}, io.Discard); err == nil || !strings.HasPrefix(err.Error(), "--metrics-addr: ") {
		t.Errorf("a busy --metrics-addr: %v", err)
	}
}

// TestRunServesItsReport: once the report is written, the run's metrics server serves it at
// /report/ and the waiting line says so.
func TestRunServesItsReport(t *testing.T) {
	m, err := startMetrics(MetricsOptions{Addr: "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop(io.Discard)
	if got := m.served(); strings.Contains(got, "/report/") {
		t.Errorf("before the report: serves %q", got)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	m.serveReport(dir, &log)
	url := "http://" + m.srv.Addr() + "/report/report.json"
	if !strings.Contains(log.String(), "report: served at http://"+m.srv.Addr()+"/report/") || !strings.Contains(m.served(), "/report/") {
		t.Errorf("log %q, served %q: want both to name /report/", log.String(), m.served())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	noServer := &runMetrics{}
	noServer.serveReport(dir, &log) // --metrics-addr="": nothing to serve on, and no panic
	if got := noServer.served(); !strings.Contains(got, "--metrics-addr is empty") {
		t.Errorf("without a server: %q", got)
	}
}
