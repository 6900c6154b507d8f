package fleet

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// What the fleet's own credential reads in every run, of any name: the checks, the shared watch,
// churn and cleanup.
var adminPermissions = []access.Permission{
	{Verb: "list", Resource: "nodes", For: "check that the fleet's names are free"},
	{Verb: "watch", Resource: "nodes", For: "the fleet's shared node watch"},
	{Verb: "get", Resource: "nodes", For: "churn"},
	{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "churn"},
	{Verb: "list", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "cleanup"},
}

// ownPermissions is what the fleet's own credential does to node's Node and Lease, and to no other
// Node or Lease: RBAC grants them by name (deploy/rbac.go), so they are checked for the run's first
// and last node, as impersonation is.
func ownPermissions(node string) []access.Permission {
	return []access.Permission{
		{Verb: "delete", Resource: "nodes", Name: node, For: "cleanup"},
		{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: node, For: "cleanup"},
	}
}

// claimPermission is why the preflight checks ClaimPermissions.
const claimPermission = "the run's claim on its shard"

// ClaimPermissions is what the run's claim on its shard of the fleet takes (claim.go): RBAC cannot
// limit a create by name, but the claim's renewals and its deletion are granted by name (deploy/rbac.go),
// so that the fleet's credential may update no Lease but its own claims.
func ClaimPermissions(name string) []access.Permission {
	const why = claimPermission
	return []access.Permission{
		{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: why},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: name, For: why},
		{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: name, For: why},
	}
}

// What the fleet's credential does with pods, only when it runs them (Config.PodsPerNode above 0).
var podPermissions = []access.Permission{
	{Verb: "create", Resource: "pods", Namespace: fleetname.PodNamespace, For: "the fleet creates its pods"},
	{Verb: "get", Resource: "pods", Namespace: fleetname.PodNamespace, For: "adopt the pods a --keep run left"},
	{Verb: "list", Resource: "pods", Namespace: fleetname.PodNamespace, For: "the fleet's pod watch"},
	{Verb: "watch", Resource: "pods", Namespace: fleetname.PodNamespace, For: "the fleet's pod watch"},
	{Verb: "delete", Resource: "pods", Namespace: fleetname.PodNamespace, For: "cleanup"},
}

// What the fleet's credential does in the heartbeat footprint, whose agents have no pod watch of
// their own: one watch of every pod bound to a node, in every namespace (pod_watch.go). Reading every
// pod's spec is a real privilege (their environment, their commands), which
// deploy/rbac/bound-pods.yaml grants apart from the rest.
var boundPodPermissions = []access.Permission{
	{Verb: "list", Resource: "pods", For: "the fleet's watch of the pods bound to its nodes (heartbeat footprint)"},
	{Verb: "watch", Resource: "pods", For: "the fleet's watch of the pods bound to its nodes (heartbeat footprint)"},
}

// Permissions is every permission the fleet's credential needs for a run of cfg, each once, in the
// order the preflight checks them: the fleet's own (RunPermissions for its first and last node,
// PodPermissions with pods, BoundPodPermissions in the heartbeat footprint, WorkloadPermissions with
// workloads), and with IdentityFleet what its agents send (KubeletPermissions).
func Permissions(r Resolved) []access.Permission { return permissions(r.Config()) }

// permissions is Permissions of a resolved cfg.
func permissions(cfg Config) []access.Permission {
	first, last := fleetname.NodeName(cfg.NamePrefix, cfg.FirstIndex), fleetname.NodeName(cfg.NamePrefix, cfg.FirstIndex+cfg.Nodes-1)
	id := cfg.Identity
	if IdentityOf(cfg) == IdentityByCertificate {
		// Each node's certificate is its credential: the fleet's impersonates no one.
		id = IdentityFleet
	}
	perms := append(RunPermissions(id, first, last), ClaimPermissions(fleetname.ClaimName(cfg.NamePrefix, cfg.Shard))...)
	if cfg.PodsPerNode > 0 {
		perms = append(perms, PodPermissions()...)
	}
	if cfg.Footprint == agent.FootprintHeartbeat {
		perms = append(perms, boundPodPermissions...)
	}
	if cfg.Workloads != nil {
		perms = append(perms, WorkloadPermissions(fleetname.WorkloadNamespace(cfg.Fleet, cfg.RunID), *cfg.Workloads)...)
	}
	if cfg.Identity == IdentityFleet {
		perms = append(perms, KubeletPermissions(cfg.Footprint, cfg.PodsPerNode > 0, first, last)...)
	}
	return unique(perms)
}

// KubeletPermissions is what agents of footprint fp send, with pods bound to their nodes or
// without, as permissions of the fleet's credential, which sends their requests itself with
// --identity=fleet (as nodes, the Node authorizer grants them). It is agent.Requests, the agent's
// own table of what it sends, in the fleet's namespaces; the writes that RBAC grants by name
// (grantedByName) are checked for each of nodes, the run's first and last.
func KubeletPermissions(fp agent.Footprint, pods bool, nodes ...string) []access.Permission {
	var perms []access.Permission
	for _, k := range agent.Requests(fp, pods) {
		p := access.Permission{Verb: k.Verb, Group: k.Group, Resource: k.Resource, Subresource: k.Subresource,
			Namespace: scopeNamespace(k.Scope), For: k.For}
		name, ok := grantedByName(p)
		if !ok {
			perms = append(perms, p)
			continue
		}
		for _, n := range nodes {
			p.Name = name(n)
			perms = append(perms, p)
		}
	}
	return unique(perms)
}

// grantedByName says whether deploy's RBAC grants p to the fleet by name only, and the name it
// grants for a node: the status patches and renewals of the fleet's own Nodes and Leases (a real
// node's status patched NotReady, or its Lease left to expire, would have its pods evicted), and the
// tokens of the one ServiceAccount the fleet's pods run as (a token of another would be its
// privileges).
func grantedByName(p access.Permission) (func(node string) string, bool) {
	self := func(node string) string { return node }
	switch {
	case p.Group == "" && p.Resource == "nodes" && p.Subresource == "status" && p.Verb == "patch":
		return self, true
	case p.Group == "coordination.k8s.io" && p.Resource == "leases" && p.Verb == "update":
		return self, true
	case p.Group == "" && p.Resource == "serviceaccounts" && p.Subresource == "token":
		return func(string) string { return fleetname.PodServiceAccount }, true
	}
	return nil, false
}

// scopeNamespace is the namespace of the fleet's requests of scope s.
func scopeNamespace(s agent.Scope) string {
	switch s {
	case agent.ScopeLeases:
		return agent.LeaseNamespace
	case agent.ScopeNodeEvents:
		return metav1.NamespaceDefault
	case agent.ScopePods:
		return fleetname.PodNamespace
	}
	return ""
}

// unique keeps the first of each permission that perms ask for more than once (the fleet's own
// get of nodes for churn and the kubelets' get of their Nodes; the Events of Nodes and of pods, both
// in namespace default), so that each is checked, and named missing, once.
func unique(perms []access.Permission) []access.Permission {
	var out []access.Permission
	seen := map[access.Permission]bool{}
	for _, p := range perms {
		key := p
		key.For = ""
		if !seen[key] {
			seen[key] = true
			out = append(out, p)
		}
	}
	return out
}

// BoundPodPermissions is what the fleet's credential needs besides RunPermissions in the heartbeat
// footprint.
func BoundPodPermissions() []access.Permission {
	return append([]access.Permission(nil), boundPodPermissions...)
}

// PodPermissions is what the fleet's credential needs besides RunPermissions when the run has pods.
func PodPermissions() []access.Permission {
	return append([]access.Permission{podNamespacePermission}, podPermissions...)
}

// RunPermissions is what the fleet's credential needs for its own requests in a run with identity
// id; nodes are fleet node names to check impersonation for, the first and last of the run's: RBAC
// grants kubelets by name (deploy/rbac.go), so a grant for fewer nodes than the run's is refused
// before anything is written. With IdentityFleet it impersonates no one, and sends the agents'
// requests itself (KubeletPermissions).
func RunPermissions(id Identity, nodes ...string) []access.Permission {
	perms := append([]access.Permission(nil), adminPermissions...)
	for i, node := range nodes {
		if i == 0 || node != nodes[i-1] {
			perms = append(perms, ownPermissions(node)...)
		}
	}
	if id == IdentityFleet {
		return perms
	}
	for i, node := range nodes {
		if i == 0 || node != nodes[i-1] {
			perms = append(perms, access.Permission{Verb: "impersonate", Resource: "users", Name: "system:node:" + node, For: "requests as each node's kubelet, --identity=node"})
		}
	}
	return append(perms,
		access.Permission{Verb: "impersonate", Resource: "groups", Name: "system:nodes", For: "requests as each node's kubelet, --identity=node"},
	)
}

// CleanupPermissions is what `fakelet cleanup` needs before it knows the fleet's names: the lists
// that find its Nodes and their Leases. The deletions are granted by name; one that is refused
// leaves its object, named in the cleanup's *LeftError.
func CleanupPermissions() []access.Permission {
	var out []access.Permission
	for _, p := range adminPermissions {
		if p.Verb == "list" {
			out = append(out, p)
		}
	}
	return out
}
