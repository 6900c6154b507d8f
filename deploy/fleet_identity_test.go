package deploy

import (
	"slices"
	"testing"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/fleettest"
)

// TestFleetIdentityRBAC: deploy/rbac/fakelet.yaml with fleet-identity.yaml grants what a run with
// --identity=fleet asks for in the kubelet footprint (whose requests include the heartbeat
// footprint's), and with pods.yaml and fleet-identity-pods.yaml what it asks for with pods
// (fleet.Permissions, the agents' requests by agent.Requests); and neither fleet-identity file grants
// anything that no run asks for.
func TestFleetIdentityRBAC(t *testing.T) {
	for _, tc := range []struct {
		pods  int
		files []string // the last is the one whose every rule must be used
	}{
		{0, []string{"rbac/fakelet.yaml", "rbac/fleet-identity.yaml"}},
		{2, []string{"rbac/fakelet.yaml", "rbac/pods.yaml", "rbac/fleet-identity.yaml", "rbac/fleet-identity-pods.yaml"}},
	} {
		var roles []object
		for _, f := range tc.files {
			for _, o := range readObjects(t, f) {
				if o.Kind == "ClusterRole" || o.Kind == "Role" {
					roles = append(roles, o)
				}
			}
		}
		perms := fleet.Permissions(fleettest.Resolve(t, fleet.Config{Nodes: 1000, PodsPerNode: tc.pods, Identity: fleet.IdentityFleet, Footprint: agent.FootprintKubelet}))
		used := map[string]bool{} // namespace/group/resource/verb
		for _, p := range perms {
			if !slices.ContainsFunc(roles, func(r object) bool {
				return (r.Kind == "ClusterRole" || r.Metadata.Namespace == p.Namespace) && grantsSub(r, p)
			}) {
				t.Errorf("%v: nothing grants %s (%s)", tc.files, p, p.For)
			}
			res := p.Resource
			if p.Subresource != "" {
				res += "/" + p.Subresource
			}
			used[p.Namespace+"/"+p.Group+"/"+res+"/"+p.Verb] = true
		}
		last := tc.files[len(tc.files)-1]
		for _, o := range readObjects(t, last) {
			for _, rule := range o.Rules {
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							if !used[o.Metadata.Namespace+"/"+g+"/"+res+"/"+v] {
								t.Errorf("%s: %s %s grants %s %s in group %q, which no run with --identity=fleet asks for", last, o.Kind, o.Metadata.Name, v, res, g)
							}
						}
					}
				}
			}
		}
	}
}

// grantsSub is grants for a permission that may be of a subresource, which RBAC writes
// "resource/subresource".
func grantsSub(role object, p access.Permission) bool {
	if p.Subresource != "" {
		p.Resource += "/" + p.Subresource
	}
	return grants(role, p)
}
