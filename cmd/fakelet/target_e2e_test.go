package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/controlplane"
)

// TestTwoRunsShareTheLocalControlPlane: two runs target the local control plane, the first
// starting it; when the first releases it, the second still uses it; when the second releases it,
// it stops. End-to-end: it starts a real control plane (make controlplane).
func TestTwoRunsShareTheLocalControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts a real control plane; skipped under -short")
	}
	if _, err := controlplane.FindBinaries(""); err != nil {
		t.Fatalf("end-to-end tests need the control plane binaries: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "controlplane")
	t.Cleanup(func() {
		if err := controlplane.Down(context.Background(), dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	first, err := resolveTarget(ctx, targetFlags{controlPlaneDir: dir}, &out)
	if err != nil {
		t.Fatal(err)
	}
	second, err := resolveTarget(ctx, targetFlags{controlPlaneDir: dir}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if first.Local.APIServerURL != second.Local.APIServerURL {
		t.Fatalf("the second run started another control plane (%s, the first's is %s)", second.Local.APIServerURL, first.Local.APIServerURL)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "left the local control plane up: 1 other user(s) still attached") {
		t.Errorf("the first run's release said %q", out.String())
	}
	c, err := kubernetes.NewForConfig(second.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the second run's control plane after the first run left: %v", err)
	}
	if r, err := controlplane.Status(ctx, dir); err != nil || !r.Healthy || r.Users != 1 || !r.UntilLastUser {
		t.Fatalf("status after the first run left: %+v, %v; want healthy, started by a run, 1 user", r, err)
	}
	out.Reset()
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "stopped the local control plane") {
		t.Errorf("the last run's release said %q", out.String())
	}
	if r, err := controlplane.Status(ctx, dir); err != nil || r.Recorded {
		t.Errorf("status after the last run left: %+v, %v; want no control plane", r, err)
	}
}
