package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/fleetname"
)

// TestRunWithWorkloadsIsRefusedWithoutTheirGrants: `fakelet run --profile notready` (a Deployment
// with a Service) with a ServiceAccount that has fakelet.yaml and pods.yaml but not workloads.yaml
// exits 1 before it writes anything, naming what the workloads need and the file that grants it: no
// Node of the fleet, no namespace of the run. Before, the preflight checked none of it, and such a
// run registered its fleet and failed at its first workload.
func TestRunWithWorkloadsIsRefusedWithoutTheirGrants(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	cfg := rbacFor(t, cp, "no-workloads", rbacFile(t, "fakelet.yaml"), rbacFile(t, "pods.yaml"))
	kubeconfig := writeKubeconfig(t, cfg, cfg.CAData)
	const fleetName = "wlrefused"
	p := startFakelet(t, "run", "--kubeconfig", kubeconfig, "--profile", "notready", "--nodes", "30", "--fleet", fleetName,
		"--metrics-addr", "")
	if code := p.wait(2 * time.Minute); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	for _, want := range []string{"create namespaces (the run creates its workloads' namespace)", "create deployments.apps in fakelet-" + fleetName + "-",
		"create services in fakelet-" + fleetName + "-", "watch endpointslices.discovery.k8s.io in fakelet-" + fleetName + "-",
		"Nothing was written", "deploy/rbac/workloads.yaml"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("the refusal does not say %q", want)
		}
	}
	if strings.Contains(p.stderr.String(), "jobs") || strings.Contains(p.stderr.String(), "daemonsets") {
		t.Errorf("the refusal asks for kinds the profile does not create")
	}
	ctx := context.Background()
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleetname.Label + "=" + fleetName})
	if err != nil || len(nodes.Items) != 0 {
		t.Errorf("the refused run's nodes: %d, %v; want none", len(nodes.Items), err)
	}
	namespaces, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces.Items {
		if strings.HasPrefix(ns.Name, "fakelet-"+fleetName) {
			t.Errorf("the refused run created namespace %s", ns.Name)
		}
	}
}
