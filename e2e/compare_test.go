package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/report"
)

// TestCompareStatusModeWritesMoreToEtcd runs fakelet compare at a small size: status mode (a full
// status patch every 10 s) must write several times the bytes lease mode writes to etcd (KEP-589).
func TestCompareStatusModeWritesMoreToEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts two control planes; skipped under -short")
	}
	bins, err := controlplane.FindBinaries("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "fakelet")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", exe, "fakelet.dev/fakelet/cmd/fakelet").CombinedOutput(); err != nil {
		t.Fatalf("build fakelet: %v\n%s", err, out)
	}
	reports := filepath.Join(dir, "reports")
	cmd := exec.CommandContext(ctx, exe, "compare", "--nodes", "100", "--duration", "45s", "--settle", "10s",
		"--scrape-interval", "5s", "--bin-dir", filepath.Dir(bins.Etcd), "--report-dir", reports,
		"--controlplane-dir", filepath.Join(dir, "cp"))
	out, err := cmd.CombinedOutput()
	t.Logf("\n%s", out)
	if err != nil {
		t.Fatalf("fakelet compare: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(reports, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c report.Comparison
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Sides) != 2 || c.Sides[0].Load.Etcd == nil || c.Sides[1].Load.Etcd == nil {
		t.Fatalf("compare.json has no etcd load for both modes: %s", b)
	}
	lease, status := c.Sides[0].Load.Etcd.WALBytes, c.Sides[1].Load.Etcd.WALBytes
	if lease <= 0 || status < 3*lease {
		t.Errorf("etcd WAL bytes: lease %.0f, status %.0f (%.1fx); want status at least 3x lease", lease, status, status/lease)
	}
	for _, mode := range []string{"lease", "status"} {
		if _, err := report.ReadFile(filepath.Join(reports, mode, report.JSONFile)); err != nil {
			t.Errorf("%s report: %v", mode, err)
		}
	}
}
