package deploy

import (
	"testing"

	"fakelet.dev/fakelet/fleet"
)

// TestPodsRBAC: the pods component is deploy/rbac/pods.yaml, and its Role grants, in the namespace of
// the fleet's pods, what a run with pods asks for beyond RunPermissions (fleet.PodPermissions).
func TestPodsRBAC(t *testing.T) {
	component, ref := readObjects(t, "kubernetes/components/pods/rbac.yaml"), readObjects(t, "rbac/pods.yaml")
	if len(component) != 2 || len(ref) != 2 || !equalRules(component[0], ref[0]) {
		t.Fatalf("components/pods/rbac.yaml %+v, want deploy/rbac/pods.yaml's %+v", component, ref)
	}
	role := component[0]
	if role.Kind != "Role" || role.Metadata.Namespace != fleet.PodNamespace {
		t.Fatalf("%s in namespace %q, want a Role in %q", role.Kind, role.Metadata.Namespace, fleet.PodNamespace)
	}
	for _, p := range fleet.PodPermissions() {
		if p.Namespace != fleet.PodNamespace {
			t.Errorf("permission %+v outside the pods' namespace", p)
		}
		if !grants(role, p) {
			t.Errorf("no rule grants %s %s (%s)", p.Verb, p.Resource, p.For)
		}
	}
	if n := len(role.Rules[0].Verbs); len(role.Rules) != 1 || n != len(fleet.PodPermissions()) {
		t.Errorf("the pods' Role grants %+v, want exactly fleet.PodPermissions", role.Rules)
	}
}
