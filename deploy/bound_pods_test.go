package deploy

import (
	"slices"
	"testing"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/fleettest"
)

// heldTo checks that files grant every one of perms (a ClusterRole in any namespace, a Role in its
// own), and that every rule of the last of them is one of perms or of also.
func heldTo(t *testing.T, files []string, perms, also []access.Permission) {
	t.Helper()
	var roles []object
	for _, f := range files {
		for _, o := range readObjects(t, f) {
			if o.Kind == "ClusterRole" || o.Kind == "Role" {
				roles = append(roles, o)
			}
		}
	}
	used := map[string]bool{} // group/resource/verb
	for _, p := range perms {
		if !slices.ContainsFunc(roles, func(r object) bool {
			return (r.Kind == "ClusterRole" || r.Metadata.Namespace == p.Namespace) && grantsSub(r, p)
		}) {
			t.Errorf("%v: nothing grants %s (%s)", files, p, p.For)
		}
	}
	for _, p := range slices.Concat(perms, also) {
		used[p.Group+"/"+p.Resource+"/"+p.Verb] = true
	}
	last := files[len(files)-1]
	for _, o := range readObjects(t, last) {
		for _, rule := range o.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						if !used[g+"/"+res+"/"+v] {
							t.Errorf("%s: %s %s grants %s %s in group %q, which fakelet never asks for", last, o.Kind, o.Metadata.Name, v, res, g)
						}
					}
				}
			}
		}
	}
}

// TestBoundPodsRBAC: deploy/rbac/fakelet.yaml with bound-pods.yaml grants what a run in the heartbeat
// footprint asks for (fleet.Permissions: its one watch of every bound pod), and bound-pods.yaml
// grants nothing else. Before it, no file granted the list and watch of pods in every namespace, and
// a deployed fleet in the heartbeat footprint was refused by its preflight.
func TestBoundPodsRBAC(t *testing.T) {
	perms := fleet.Permissions(fleettest.Resolve(t, fleet.Config{Nodes: 1000, Footprint: agent.FootprintHeartbeat}))
	heldTo(t, []string{"rbac/fakelet.yaml", "rbac/bound-pods.yaml"}, perms, nil)
	for _, p := range fleet.BoundPodPermissions() {
		if !slices.ContainsFunc(perms, func(q access.Permission) bool { return q.String() == p.String() }) {
			t.Errorf("the heartbeat footprint's preflight does not check %s", p)
		}
	}
}
