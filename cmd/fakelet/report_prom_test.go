package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportFromPrometheusRefusesBadInput: each mistake is named, before any query, and nothing is
// written.
func TestReportFromPrometheusRefusesBadInput(t *testing.T) {
	closed := httptest.NewServer(nil)
	closed.Close()
	dir := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--prometheus", "localhost:9090", "--from", "1", "--to", "2"}, `--prometheus "localhost:9090": want the server's URL`},
		{[]string{"--prometheus", "http://127.0.0.1:9", "--to", "2"}, "--prometheus needs --from"},
		{[]string{"--prometheus", "http://127.0.0.1:9", "--from", "1"}, "--prometheus needs --to"},
		{[]string{"--prometheus", "http://127.0.0.1:9", "--from", "yesterday", "--to", "2"}, `--from "yesterday": want an RFC 3339 time`},
		{[]string{"--prometheus", "http://127.0.0.1:9", "--from", "2026-03-01T10:00:00Z", "--to", "2026-03-01T09:00:00Z"}, "--to 2026-03-01T09:00:00Z is not after --from 2026-03-01T10:00:00Z"},
		{[]string{"--prometheus", "http://127.0.0.1:9", "--from", "1", "--to", "2", "--phases-from", filepath.Join(dir, "none.json")}, "--phases-from: open"},
		{[]string{"--prometheus", "http://127.0.0.1:9", "--from", "1", "--to", "2", "x.json"}, "--prometheus reads the run from Prometheus, not from x.json"},
		{[]string{"--from", "1", "x.json"}, "--from is for a report from Prometheus"},
		{[]string{"--prometheus", "http://127.0.0.1:9", "--from", "1", "--to", "2", "--html", "r.html"}, "--html is for a report.json"},
		{[]string{"--prometheus", closed.URL, "--from", "1", "--to", "2"}, "Prometheus at " + closed.URL + " does not answer"},
	} {
		out, err := runFakelet(t, append([]string{"report", "--out", dir}, tc.args...)...)
		if tc.args[0] != "--prometheus" {
			out, err = runFakelet(t, append([]string{"report"}, tc.args...)...)
		}
		if err == nil || !strings.Contains(err.Error()+out, tc.want) {
			t.Errorf("fakelet report %v: %v\n%s\nwant an error with %q", tc.args, err, out, tc.want)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused report wrote %s: %v", dir, err)
	}
}
