package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/report"
)

// TestWriteReportNamesItsDirectory: without --out a run's and a capacity run's reports go to
// reports/NAME-START; with it, where it says. Either way the table is printed and the page named.
func TestWriteReportNamesItsDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	t0 := time.Date(2026, 12, 1, 12, 30, 5, 0, time.UTC)
	r := report.Build(record.Record{Parameters: record.Parameters{Nodes: 1, Mode: "lease"}, Start: t0, End: t0.Add(time.Minute)})
	for _, tc := range []struct{ dir, name, want string }{
		{"", "capacity", filepath.Join("reports", "capacity-20261201-123005")},
		{"", "run", filepath.Join("reports", "run-20261201-123005")},
		{"mine", "run", "mine"},
	} {
		var out, log strings.Builder
		dir, err := WriteReport(r, tc.dir, tc.name, &out, &log)
		if err != nil {
			t.Fatal(err)
		}
		if dir != tc.want || log.String() != "report: "+filepath.Join(tc.want, report.HTMLFile)+"\n" || out.Len() == 0 {
			t.Errorf("written to %q, logged %q, printed %d bytes; want %s", dir, log.String(), out.Len(), tc.want)
		}
		if _, err := os.Stat(filepath.Join(tc.want, report.JSONFile)); err != nil {
			t.Error(err)
		}
	}
}
