package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A workload that cannot fit the fleet --nodes makes is refused by field before anything starts.
func TestRunRefusesWorkloadsThatDoNotFit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yaml")
	profile := `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: web}
spec:
  nodes: 100
  workloads:
    items:
    - {name: web, kind: Deployment, replicas: 1000, requests: {cpu: 100m}}
  phases: [{name: p, duration: 1m}]
`
	if err := os.WriteFile(path, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := prepareRun(t, "--profile", path); err != nil {
		t.Fatalf("100 nodes: %v", err)
	}
	_, _, err := prepareRun(t, "--profile", path, "--nodes", "10")
	want := path + ":8: spec.workloads.items[0].replicas: web × 1000 pods: CPU 100 requested, and 10 nodes have 80 allocatable"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("10 nodes: %v, want %q", err, want)
	}
}
