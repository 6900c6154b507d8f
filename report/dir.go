package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Files a report directory holds.
const (
	JSONFile     = "report.json"
	HTMLFile     = "report.html"
	PerfDataFile = "perfdata.json"
	TextFile     = "summary.txt"
)

// WriteDir writes report.json, report.html, perfdata.json and summary.txt into dir, creating it.
func (r *Report) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report directory: %w", err)
	}
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{JSONFile, func(b *bytes.Buffer) error { return r.WriteJSON(b) }},
		{PerfDataFile, func(b *bytes.Buffer) error { return r.WritePerfData(b) }},
		{TextFile, func(b *bytes.Buffer) error { return r.WriteText(b) }},
		{HTMLFile, func(b *bytes.Buffer) error { return r.WriteHTML(b) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, f.name), err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	return nil
}
