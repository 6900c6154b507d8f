package fleet

import (
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/fleettest"
)

// TestWorkloadPermissions: a run that creates workloads checks the creation of its namespace, its
// deletion by name, the creation and deletion of each kind it creates there, and the report's
// watches there; a shard that only watches checks the watches; a run without workloads, none.
func TestWorkloadPermissions(t *testing.T) {
	strs := func(cfg Config) []string {
		var out []string
		for _, p := range Permissions(fleettest.Resolve(t, cfg)) {
			out = append(out, p.String())
		}
		return out
	}
	base := Config{Nodes: 3, RunID: "20260301-120000-abcdef"}
	ns := "fakelet-fakelet-20260301-120000-abcdef"
	creates := base
	creates.Workloads = &WorkloadAccess{Creates: []access.Permission{{Group: "apps", Resource: "deployments"}, {Resource: "services"}}}
	watches := base
	watches.Workloads = &WorkloadAccess{}
	watched := []string{"list pods in " + ns, "watch pods in " + ns, "list endpointslices.discovery.k8s.io in " + ns,
		"watch endpointslices.discovery.k8s.io in " + ns, "list deployments.apps in " + ns, "watch deployments.apps in " + ns}
	created := []string{"create namespaces", "delete namespaces " + ns, "create deployments.apps in " + ns, "delete deployments.apps in " + ns,
		"create services in " + ns, "delete services in " + ns}
	for _, tc := range []struct {
		name      string
		cfg       Config
		want, not []string
	}{
		{"creates", creates, slices.Concat(created, watched), []string{"create jobs.batch in " + ns, "create daemonsets.apps in " + ns}},
		{"watches", watches, watched, created},
		{"none", base, nil, slices.Concat(created, watched)},
	} {
		got := strs(tc.cfg)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: does not check %q: %v", tc.name, w, got)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(got, w) {
				t.Errorf("%s: checks %q, which it does not do", tc.name, w)
			}
		}
	}
}

// TestPreflightRefusesWorkloadsBeforeAnyWrite: a credential that may run the fleet but not create the
// workloads' namespace is refused before the fleet writes anything, with what is missing and the
// file that grants it.
func TestPreflightRefusesWorkloadsBeforeAnyWrite(t *testing.T) {
	client := fake.NewClientset()
	reviewer(client, "carol", func(r *authorizationv1.ResourceAttributes) bool { return r.Resource != "namespaces" })
	cfg := Config{Nodes: 3, RunID: "r1", Workloads: &WorkloadAccess{Creates: []access.Permission{{Group: "apps", Resource: "deployments"}}}}
	f, err := NewWithClients(fleettest.Resolve(t, cfg), client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	f.checkPermissions = true // as New sets it
	err = f.Run(t.Context())
	for _, want := range []string{"missing 2 permission(s): create namespaces (the run creates its workloads' namespace), delete namespaces fakelet-fakelet-r1",
		"deploy/rbac/workloads.yaml"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("run error %v, want one containing %q", err, want)
		}
	}
	for _, a := range client.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" && !strings.HasPrefix(a.GetResource().Resource, "selfsubject") {
			t.Errorf("the refused run sent %s %s", v, a.GetResource().Resource)
		}
	}
}
