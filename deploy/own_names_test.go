package deploy

import (
	"slices"
	"testing"

	"fakelet.dev/fakelet/fleetname"
)

// TestWritesAreLimitedToTheFleetsNames: no rule of deploy/rbac's files, nor of the large overlay's
// kubelets, lets the ServiceAccount delete, patch or update a Node, its status or a Lease in
// kube-node-lease other than the fleet's own, by name: a real node's status patched NotReady, its
// Lease stopped or its Node deleted would have its pods evicted. Creates carry no name for RBAC to
// check; what the fleet creates has the fleet's names, and NodeRestriction holds each impersonated
// kubelet to its own Node and Lease.
func TestWritesAreLimitedToTheFleetsNames(t *testing.T) {
	for file, nodes := range map[string]int{
		"rbac/fakelet.yaml": 1000, "rbac/fleet-identity.yaml": 1000, "rbac/pods.yaml": 1000, "rbac/fleet-identity-pods.yaml": 1000,
		"rbac/bound-pods.yaml": 1000, "rbac/workloads.yaml": 1000,
		"kubernetes/base/rbac.yaml": 1000, "kubernetes/overlays/large/kubelets.yaml": 50000,
	} {
		var own []string
		for i := range nodes {
			own = append(own, fleetname.NodeName(fleetname.DefaultNamePrefix, i))
		}
		for _, o := range readObjects(t, file) {
			for _, r := range o.Rules {
				for _, res := range r.Resources {
					guarded := (slices.Contains(r.APIGroups, "") && (res == "nodes" || res == "nodes/status")) ||
						(slices.Contains(r.APIGroups, "coordination.k8s.io") && res == "leases" && o.Metadata.Namespace == "kube-node-lease") ||
						(slices.Contains(r.APIGroups, "coordination.k8s.io") && res == "leases" && o.Kind == "ClusterRole")
					if !guarded {
						continue
					}
					for _, v := range r.Verbs {
						if v != "delete" && v != "patch" && v != "update" && v != "deletecollection" {
							continue
						}
						if len(r.ResourceNames) == 0 {
							t.Errorf("%s: %s %s lets the fleet %s any of %s", file, o.Kind, o.Metadata.Name, v, res)
						}
						for _, n := range r.ResourceNames {
							if _, ok := slices.BinarySearch(own, n); !ok && !(res == "leases" && isClaim(n)) {
								t.Errorf("%s: %s %s lets the fleet %s %s %s, not one of its nodes", file, o.Kind, o.Metadata.Name, v, res, n)
							}
						}
					}
				}
			}
		}
	}
}

// isClaim says whether name is one of the fleet's claims on its shards (fleetname.ClaimName), which the
// fleet renews and deletes by name beside its nodes' Leases.
func isClaim(name string) bool {
	for n := 1; n <= MaxClaimShards; n++ {
		for i := range n {
			if name == fleetname.ClaimName(fleetname.DefaultNamePrefix, fleetname.Shard{Index: i, Count: n}) {
				return true
			}
		}
	}
	return false
}
