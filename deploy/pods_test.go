package deploy

import (
	"bytes"
	"os"
	"testing"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// TestPodsRBAC: the pods component is deploy/rbac/pods.yaml; it creates the pods' own namespace and
// grants, there (and the get of that one namespace), what a run with pods asks for beyond
// RunPermissions (fleet.PodPermissions), and nothing else: no pod of any other namespace.
func TestPodsRBAC(t *testing.T) {
	component, err := os.ReadFile("kubernetes/components/pods/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile("rbac/pods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(component, ref) {
		t.Fatal("components/pods/rbac.yaml is not deploy/rbac/pods.yaml")
	}
	var namespace bool
	var roles []object
	for _, o := range readObjects(t, "rbac/pods.yaml") {
		switch o.Kind {
		case "Namespace":
			namespace = namespace || o.Metadata.Name == fleetname.PodNamespace
		case "Role", "ClusterRole":
			roles = append(roles, o)
			if o.Kind == "Role" && o.Metadata.Namespace != fleetname.PodNamespace {
				t.Errorf("Role %s in namespace %q, want %q", o.Metadata.Name, o.Metadata.Namespace, fleetname.PodNamespace)
			}
		}
	}
	if !namespace {
		t.Errorf("deploy/rbac/pods.yaml does not create namespace %s", fleetname.PodNamespace)
	}
	used := map[string]bool{}
	for _, p := range fleet.PodPermissions() {
		if p.Namespace != fleetname.PodNamespace && !(p.Resource == "namespaces" && p.Name == fleetname.PodNamespace) {
			t.Errorf("permission %s outside the pods' namespace", p)
		}
		granted := false
		for _, r := range roles {
			if (r.Kind == "ClusterRole") == (p.Namespace == "") && grants(r, p) {
				granted = true
			}
		}
		if !granted {
			t.Errorf("no rule grants %s (%s)", p, p.For)
		}
		used[p.Resource+"/"+p.Verb] = true
	}
	for _, r := range roles {
		for _, rule := range r.Rules {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					if !used[res+"/"+v] {
						t.Errorf("%s %s grants %s %s, which fakelet never asks for", r.Kind, r.Metadata.Name, v, res)
					}
				}
			}
		}
	}
}
