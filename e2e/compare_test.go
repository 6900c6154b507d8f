package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	reports := filepath.Join(dir, "reports")
	cmd := exec.CommandContext(ctx, fakeletBinary(t), "compare", "--nodes", "100", "--duration", "30s", "--settle", "5s",
		"--scrape-interval", "5s", "--bin-dir", filepath.Dir(bins.Etcd), "--out", reports,
		"--controlplane-dir", filepath.Join(dir, "cp"))
	out, err := cmd.CombinedOutput()
	t.Logf("\n%s", out)
	if err != nil {
		t.Fatalf("fakelet compare: %v", err)
	}
	statusWritesMore(t, readComparison(t, reports), 3)
}

// TestCompareOnTheSameClusterAt500Nodes runs fakelet compare --same-cluster at 500 nodes on the shared
// control plane, which stays up: lease mode, its fleet deleted, then status mode. Status mode must
// write several times the bytes to etcd, each mode's numbers its own, and neither fleet left behind.
func TestCompareOnTheSameClusterAt500Nodes(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	began := time.Now()
	reports := filepath.Join(t.TempDir(), "reports")
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, fakeletBinary(t), "compare", "--same-cluster", "--controlplane-dir", cp.Dir,
		"--nodes", "500", "--duration", "30s", "--settle", "5s", "--scrape-interval", "5s", "--out", reports)
	out, err := cmd.CombinedOutput()
	t.Logf("\n%s", out)
	if err != nil {
		t.Fatalf("fakelet compare: %v", err)
	}
	cmp := readComparison(t, reports)
	if !strings.Contains(cmp.Target, cp.APIServerURL) {
		t.Errorf("compare.json target %q, want the shared control plane %s", cmp.Target, cp.APIServerURL)
	}
	statusWritesMore(t, cmp, 3)
	// The status run's window holds its own requests only: no lease renewals from the lease fleet,
	// deleted before it registered, and about as many requests a second as lease mode (KEP-589).
	var leasePuts, statusPuts, leaseAll, statusAll float64
	for i, side := range cmp.Sides {
		for _, r := range side.Load.Requests {
			if r.Verb == "WATCH" {
				continue
			}
			if i == 0 {
				leaseAll += r.Rate
			} else {
				statusAll += r.Rate
			}
			if r.Verb == "PUT" && r.Resource == "leases" {
				if i == 0 {
					leasePuts += r.Rate
				} else {
					statusPuts += r.Rate
				}
			}
		}
	}
	// 500 nodes renew every 10.0-10.4 s: about 49 a second.
	if leasePuts < 40 || leasePuts > 55 || statusPuts > 5 {
		t.Errorf("PUT leases/s: lease mode %.1f (want about 49), status mode %.1f (want almost none)", leasePuts, statusPuts)
	}
	if statusAll > 2*leaseAll {
		t.Errorf("requests/s: status %.1f, lease %.1f; want about the same", statusAll, leaseAll)
	}
	for _, fleetName := range []string{"compare-lease", "compare-status"} {
		if n := len(fleetNodes(t, c, fleetName)); n != 0 {
			t.Errorf("%d nodes of fleet %s left after the compare", n, fleetName)
		}
	}
	if _, err := controlplane.Attach(cp.Dir); err != nil {
		t.Errorf("the shared control plane after the compare: %v (compare must not stop a control plane it did not start)", err)
	}
	t.Logf("took %v", time.Since(began).Round(time.Second))
}

func readComparison(t *testing.T, reports string) report.Comparison {
	t.Helper()
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
	for _, mode := range []string{"lease", "status"} {
		if _, err := report.ReadFile(filepath.Join(reports, mode, report.JSONFile)); err != nil {
			t.Errorf("%s report: %v", mode, err)
		}
	}
	return c
}

// statusWritesMore fails unless status mode wrote at least times the etcd WAL bytes of lease mode.
func statusWritesMore(t *testing.T, c report.Comparison, times float64) {
	t.Helper()
	lease, status := c.Sides[0].Load.Etcd.WALBytes, c.Sides[1].Load.Etcd.WALBytes
	if lease <= 0 || status < times*lease {
		t.Errorf("etcd WAL bytes: lease %.0f, status %.0f (%.1fx); want status at least %.0fx lease", lease, status, status/lease, times)
	} else {
		t.Logf("etcd WAL bytes: lease %.0f, status %.0f (%.1fx)", lease, status, status/lease)
	}
}
