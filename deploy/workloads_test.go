package deploy

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
)

// TestWorkloadsRBAC: deploy/rbac/fakelet.yaml with workloads.yaml grants what a run of a profile with
// every kind of workload asks for (fleet.Permissions with fleet.WorkloadPermissions) and what
// fakelet cleanup lists to find what such runs left (fleet.WorkloadCleanupPermissions), and
// workloads.yaml grants nothing else.
func TestWorkloadsRBAC(t *testing.T) {
	kinds := []access.Permission{{Group: "apps", Resource: "deployments"}, {Resource: "services"}, {Group: "batch", Resource: "jobs"}, {Group: "apps", Resource: "daemonsets"}}
	perms := fleet.Permissions(fleettest.Resolve(t, fleet.Config{Nodes: 1000, RunID: "20260301-120000-abcdef", Workloads: &fleet.WorkloadAccess{Creates: kinds}}))
	heldTo(t, []string{"rbac/fakelet.yaml", "rbac/workloads.yaml"}, perms, fleet.WorkloadCleanupPermissions())
}

// TestWorkloadsPolicyHoldsTheWrites: every write that workloads.yaml's ClusterRole grants in every
// namespace (RBAC cannot name a namespace that does not exist yet) is one its
// ValidatingAdmissionPolicy matches, for fakelet's ServiceAccount, and holds to namespaces labelled
// with a fleet and a run; bound to deny.
func TestWorkloadsPolicyHoldsTheWrites(t *testing.T) {
	b, err := os.ReadFile("rbac/workloads.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type resourceRule struct {
		APIGroups  []string `yaml:"apiGroups"`
		Resources  []string `yaml:"resources"`
		Operations []string `yaml:"operations"`
	}
	var policy struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     struct {
			PolicyName        string   `yaml:"policyName"`
			ValidationActions []string `yaml:"validationActions"`
			FailurePolicy     string   `yaml:"failurePolicy"`
			MatchConstraints  struct {
				ResourceRules []resourceRule `yaml:"resourceRules"`
			} `yaml:"matchConstraints"`
			MatchConditions []struct{ Expression string } `yaml:"matchConditions"`
			Validations     []struct{ Expression string } `yaml:"validations"`
		}
	}
	var rules []resourceRule
	var bound, matched, checked bool
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	for dec.Decode(&policy) == nil {
		switch policy.Kind {
		case "ValidatingAdmissionPolicy":
			rules = policy.Spec.MatchConstraints.ResourceRules
			if policy.Spec.FailurePolicy != "Fail" {
				t.Errorf("policy %s: failurePolicy %q, want Fail", policy.Metadata.Name, policy.Spec.FailurePolicy)
			}
			for _, c := range policy.Spec.MatchConditions {
				matched = matched || strings.Contains(c.Expression, "'system:serviceaccount:fakelet:fakelet'")
			}
			for _, v := range policy.Spec.Validations {
				checked = checked || strings.Contains(v.Expression, "'"+fleetname.Label+"'") && strings.Contains(v.Expression, "'fakelet.dev/run'")
			}
		case "ValidatingAdmissionPolicyBinding":
			bound = policy.Spec.PolicyName == "fakelet-workloads" && slices.Equal(policy.Spec.ValidationActions, []string{"Deny"})
		}
		policy.Spec.MatchConditions, policy.Spec.Validations = nil, nil
	}
	if !bound || !matched || !checked {
		t.Errorf("policy bound to deny %v, matching fakelet's ServiceAccount %v, checking the fleet and run labels %v", bound, matched, checked)
	}
	for _, o := range readObjects(t, "rbac/workloads.yaml") {
		for _, r := range o.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						if v != "create" && v != "delete" {
							continue
						}
						op := strings.ToUpper(v)
						if !slices.ContainsFunc(rules, func(m resourceRule) bool {
							return slices.Contains(m.APIGroups, g) && slices.Contains(m.Resources, res) && slices.Contains(m.Operations, op)
						}) {
							t.Errorf("%s %s grants %s %s in group %q, which the policy does not hold", o.Kind, o.Metadata.Name, v, res, g)
						}
					}
				}
			}
		}
	}
}

// TestComponentsAreDeployRBAC: the bound-pods and workloads components are deploy/rbac's files.
func TestComponentsAreDeployRBAC(t *testing.T) {
	for _, name := range []string{"bound-pods", "workloads"} {
		component, err := os.ReadFile("kubernetes/components/" + name + "/rbac.yaml")
		if err != nil {
			t.Fatal(err)
		}
		ref, err := os.ReadFile("rbac/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if string(component) != string(ref) {
			t.Errorf("components/%s/rbac.yaml is not deploy/rbac/%s.yaml", name, name)
		}
	}
}
