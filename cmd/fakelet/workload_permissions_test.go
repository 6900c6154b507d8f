package main

import (
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
)

// TestRunWithWorkloadsChecksTheirPermissionsFirst: a run of a profile with workloads (notready: a
// Deployment with a Service) checks, with the fleet's own permissions and before it writes anything,
// the creation of its namespace, its workloads there and their watches; a credential that may run
// the fleet but not the workloads is refused with what is missing and the file that grants it. The
// second shard of such a run only watches them. Before, the preflight checked none of it, and a run
// with the deployed ServiceAccount failed at its first workload, mid-run.
func TestRunWithWorkloadsChecksTheirPermissionsFirst(t *testing.T) {
	cfg, _, err := prepareRun(t, "--profile", "notready")
	if err != nil {
		t.Fatal(err)
	}
	ns := fleetname.WorkloadNamespace(cfg.Fleet, cfg.RunID)
	client := fake.NewClientset()
	fleettest.Grant(client, func(r *authorizationv1.ResourceAttributes) bool {
		return r.Namespace != ns && (r.Resource != "namespaces" || r.Name == fleetname.PodNamespace)
	})
	err = access.Check(t.Context(), client, fleet.Permissions(fleettest.Resolve(t, cfg)))
	for _, want := range []string{
		"create namespaces (the run creates its workloads' namespace)", "delete namespaces " + ns,
		"create deployments.apps in " + ns, "delete services in " + ns, "watch endpointslices.discovery.k8s.io in " + ns,
		"missing 12 permission(s)", "deploy/rbac/workloads.yaml",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("preflight of a run with workloads: %v, want an error naming %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "jobs") || strings.Contains(err.Error(), "daemonsets") {
		t.Errorf("the preflight checks kinds the profile does not create: %v", err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "create" || a.GetResource().Resource != "selfsubjectaccessreviews" && a.GetResource().Resource != "selfsubjectreviews" {
			t.Errorf("the preflight sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}

	cfg, _, _, err = prepareShard(t, "", "--profile", "notready", "--shard", "1/2")
	if err != nil {
		t.Fatal(err)
	}
	var perms []string
	for _, p := range fleet.Permissions(fleettest.Resolve(t, cfg)) {
		if strings.Contains(p.String(), fleetname.WorkloadNamespace(cfg.Fleet, cfg.RunID)) || p.Resource == "namespaces" && p.Name != fleetname.PodNamespace {
			perms = append(perms, p.String())
		}
	}
	if len(perms) != 6 || strings.Contains(strings.Join(perms, ","), "create") {
		t.Errorf("shard 1/2 checks %v, want the 6 watches' lists and watches only", perms)
	}
}
