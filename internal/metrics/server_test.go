package metrics

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestServer(t *testing.T) {
	for _, pprof := range []bool{false, true} {
		m := exercised(t, Options{})
		s, err := Serve("127.0.0.1:0", m, ServerOptions{Pprof: pprof})
		if err != nil {
			t.Fatal(err)
		}
		if !s.Loopback() || !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/metrics") {
			t.Errorf("URL %s, loopback %v", s.URL(), s.Loopback())
		}
		base := "http://" + s.Addr()
		code, body := get(t, s.URL())
		if code != http.StatusOK {
			t.Errorf("GET /metrics: %d", code)
		}
		for _, want := range []string{
			`fakelet_heartbeats_total{kind="lease",result="success"} 1`,
			`fakelet_nodes{fleet="fakelet",state="ready"} 7`,
			"process_cpu_seconds_total", "go_goroutines", "promhttp_metric_handler_requests_total",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("GET /metrics lacks %s", want)
			}
		}
		if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("GET /healthz: %d %q", code, body)
		}
		code, _ = get(t, base+"/debug/pprof/")
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[pprof]; code != want {
			t.Errorf("pprof %v: GET /debug/pprof/: %d, want %d", pprof, code, want)
		}
		if pprof {
			if code, body := get(t, base+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
				t.Errorf("GET /debug/pprof/goroutine: %d", code)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		cancel()
		if _, err := http.Get(s.URL()); err == nil {
			t.Error("still serving after Shutdown")
		}
	}
}

func TestServeFailsOnABusyAddress(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	s, err := Serve("127.0.0.1:0", m, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if _, err := Serve(s.Addr(), m, ServerOptions{}); err == nil || !strings.Contains(err.Error(), "serve metrics on "+s.Addr()) {
		t.Errorf("second Serve on %s: %v, want an error naming the address", s.Addr(), err)
	}
}

// rawGet sends path exactly as given (no client-side cleaning or escaping) and returns the status
// line and the whole response.
func rawGet(t *testing.T, addr, path string) (string, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: fakelet\r\nConnection: close\r\n\r\n", path)
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	status, _, _ := strings.Cut(string(b), "\r\n")
	return status, string(b)
}

// TestServerServesTheReport: /report/ is a 404 that says why until the report is written, then
// lists and serves the report directory's files, and nothing outside it: not by ../ in any
// spelling, nor by a symlink.
func TestServerServesTheReport(t *testing.T) {
	parent := t.TempDir()
	const secret = "outside the report directory"
	if err := os.WriteFile(filepath.Join(parent, "secret.txt"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "report")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"report.json": `{"profile":"steady"}`, "report.html": "<html>", "perfdata.json": "{}"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(parent, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	s, err := Serve("127.0.0.1:0", New(Options{NoProcessCollectors: true}), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if want := "http://" + s.Addr() + "/report/"; s.ReportURL() != want {
		t.Errorf("ReportURL %s, want %s", s.ReportURL(), want)
	}

	for _, path := range []string{"/report/", "/report/report.json"} {
		if code, body := get(t, "http://"+s.Addr()+path); code != http.StatusNotFound || !strings.Contains(body, "no report yet") {
			t.Errorf("GET %s before the report: %d %q, want 404 saying there is no report yet", path, code, body)
		}
	}
	if err := s.ServeReport(filepath.Join(parent, "missing")); err == nil || !strings.Contains(err.Error(), "serve the report") {
		t.Errorf("ServeReport of a missing directory: %v", err)
	}
	if err := s.ServeReport(dir); err != nil {
		t.Fatal(err)
	}

	code, body := get(t, s.ReportURL())
	for _, name := range []string{"report.json", "report.html", "perfdata.json"} {
		if code != http.StatusOK || !strings.Contains(body, `href="`+name+`"`) {
			t.Errorf("GET /report/: %d, the listing lacks %s:\n%s", code, name, body)
		}
	}
	if code, body := get(t, s.ReportURL()+"report.json"); code != http.StatusOK || body != `{"profile":"steady"}` {
		t.Errorf("GET /report/report.json: %d %q", code, body)
	}
	if code, _ := get(t, "http://"+s.Addr()+"/report"); code != http.StatusOK {
		t.Errorf("GET /report: %d, want the listing (after a redirect)", code)
	}
	for _, path := range []string{
		"/report/../secret.txt", "/report/%2e%2e/secret.txt", "/report/..%2fsecret.txt", "/report/%2e%2e%2fsecret.txt",
		"/report/./../secret.txt", "/report/report.json/../../secret.txt", "/report/link.txt", "/report//../secret.txt",
	} {
		status, resp := rawGet(t, s.Addr(), path)
		if strings.Contains(resp, secret) || strings.Contains(status, " 200 ") {
			t.Errorf("GET %s: %s, want no file from outside the report directory:\n%s", path, status, resp)
		}
	}
	if code, _ := get(t, "http://"+s.Addr()+"/report/"+url.PathEscape("../secret.txt")); code == http.StatusOK {
		t.Errorf("GET an escaped ../secret.txt: 200")
	}
	resp, err := http.Post(s.ReportURL()+"report.json", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /report/report.json: %d, want 405: the report is read-only", resp.StatusCode)
	}
}
