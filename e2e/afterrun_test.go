package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAfterRunWaitServesTheReportUntilSIGTERM: with --after-run=wait, a run that ended (--duration)
// cleans up, writes its report, says once that it waits, and then serves /metrics and the report at
// /report/ until SIGTERM, which ends it with exit code 0 at once.
func TestAfterRunWaitServesTheReportUntilSIGTERM(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	reportDir := filepath.Join(t.TempDir(), "report")
	p := startFakelet(t, "run", "--kubeconfig", cp.Kubeconfig, "--nodes", "3", "--fleet", "afterwait", "--name-prefix", "afterwait",
		"--images", "5", "--duration", "15s", "--metrics-addr", "127.0.0.1:0", "--out", reportDir, "--after-run=wait")
	eventually(t, 120*time.Second, "the waiting line", func() (bool, error) {
		select {
		case <-p.exited:
			t.Fatalf("fakelet exited (code %d) instead of waiting", p.wait(0))
		default:
		}
		return strings.Contains(p.stderr.String(), "after-run: the run is over"), nil
	})
	stderr := p.stderr.String()
	if n := strings.Count(stderr, "after-run:"); n != 1 {
		t.Errorf("%d after-run lines, want 1", n)
	}
	if n := len(fleetNodes(t, c, "afterwait")); n != 0 {
		t.Errorf("%d of the fleet's nodes left while waiting: the cleanup comes before the wait", n)
	}
	m := regexp.MustCompile(`metrics: (http://127\.0\.0\.1:\d+)/metrics`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no metrics URL in:\n%s", stderr)
	}
	base := m[1]
	if !strings.Contains(stderr, "report: served at "+base+"/report/") {
		t.Errorf("stderr does not say where the report is served")
	}
	want, err := os.ReadFile(filepath.Join(reportDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for path, check := range map[string]func(string) bool{
		"/report/report.json": func(b string) bool { return b == string(want) },
		"/report/": func(b string) bool {
			return strings.Contains(b, `href="report.html"`) && strings.Contains(b, `href="perfdata.json"`)
		},
		"/metrics": func(b string) bool { return strings.Contains(b, "fakelet_heartbeats_total{") },
		"/healthz": func(b string) bool { return b == "ok\n" },
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s while waiting: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !check(string(b)) {
			t.Errorf("GET %s while waiting: %d\n%.400s", path, resp.StatusCode, b)
		}
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d within 5 s of SIGTERM (-1: still running), want 0", code)
	}
}

// TestAfterRunWaitDoesNotHideAFailure: a run that fails, before the fleet runs or in its profile,
// exits non-zero with --after-run=wait too.
func TestAfterRunWaitDoesNotHideAFailure(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	untouched := foreignNode(t, c, "afterfail-00001", nil) // one of the fleet's names: the preflight refuses the run
	p := startFakelet(t, "run", "--kubeconfig", cp.Kubeconfig, "--nodes", "3", "--fleet", "afterfail", "--name-prefix", "afterfail",
		"--images", "5", "--duration", "15s", "--metrics-addr", "", "--after-run=wait")
	code := p.wait(60 * time.Second)
	if code <= 0 {
		t.Fatalf("exit code %d (-1: still running after 60 s), want a failure", code)
	}
	if strings.Contains(p.stderr.String(), "after-run:") {
		t.Errorf("a failed run said it waits")
	}
	untouched()

	// A profile that fails after the fleet ran: at --start-at, 4 nodes registered at 0.2/s are not
	// all Ready, so the shard refuses to play out of step. The run cleans up and exits non-zero.
	fakeletBinary(t) // built before the start time is set
	startAt := time.Now().Add(6 * time.Second).UTC().Format(time.RFC3339)
	p = startFakelet(t, "run", "--kubeconfig", cp.Kubeconfig, "--profile", "steady", "--nodes", "4", "--fleet", "afterprof",
		"--name-prefix", "afterprof", "--images", "5", "--register-qps", "0.2", "--start-at", startAt, "--metrics-addr", "", "--after-run=wait")
	if code := p.wait(90 * time.Second); code <= 0 {
		t.Fatalf("exit code %d (-1: still running after 90 s), want a failure", code)
	}
	for _, want := range []string{"nodes Ready (with their Leases) at --start-at", "deleted the fleet's Nodes and Leases"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if strings.Contains(p.stderr.String(), "after-run:") {
		t.Errorf("a run whose profile failed said it waits")
	}
	if n := len(fleetNodes(t, c, "afterprof")); n != 0 {
		t.Errorf("%d of the fleet's nodes left", n)
	}
}
