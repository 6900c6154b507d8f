package metrics

import (
	"context"
	"io"
	"net/http"
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
