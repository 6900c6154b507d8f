package fleet

import (
	"context"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
)

// Permission is one request fakelet's own credential must be allowed to make.
type Permission struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
	// For says what fakelet does with it.
	For string
}

// String reads as RBAC is written: "delete nodes", "list leases.coordination.k8s.io in kube-node-lease",
// "impersonate groups system:nodes".
func (p Permission) String() string {
	var b strings.Builder
	b.WriteString(p.Verb + " " + p.Resource)
	if p.Subresource != "" {
		b.WriteString("/" + p.Subresource)
	}
	if p.Group != "" {
		b.WriteString("." + p.Group)
	}
	if p.Name != "" {
		b.WriteString(" " + p.Name)
	}
	if p.Namespace != "" {
		b.WriteString(" in " + p.Namespace)
	}
	return b.String()
}

// What the fleet's own credential reads in every run, of any name: the checks, the shared watch,
// churn and cleanup.
var adminPermissions = []Permission{
	{Verb: "list", Resource: "nodes", For: "check that the fleet's names are free"},
	{Verb: "watch", Resource: "nodes", For: "the fleet's shared node watch"},
	{Verb: "get", Resource: "nodes", For: "churn"},
	{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "churn"},
	{Verb: "list", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "cleanup"},
}

// ownPermissions is what the fleet's own credential does to node's Node and Lease, and to no other
// Node or Lease: RBAC grants them by name (deploy/rbac.go), so they are checked for the run's first
// and last node, as impersonation is.
func ownPermissions(node string) []Permission {
	return []Permission{
		{Verb: "delete", Resource: "nodes", Name: node, For: "cleanup"},
		{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: node, For: "cleanup"},
	}
}

// claimPermission is why the preflight checks ClaimPermissions.
const claimPermission = "the run's claim on its shard"

// ClaimPermissions is what the run's claim on its shard of the fleet takes (claim.go): RBAC cannot
// limit a create by name, but the claim's renewals and its deletion are granted by name (deploy/rbac.go),
// so that the fleet's credential may update no Lease but its own claims.
func ClaimPermissions(name string) []Permission {
	const why = claimPermission
	return []Permission{
		{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: why},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: name, For: why},
		{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: name, For: why},
	}
}

// What the fleet's credential does with pods, only when it runs them (Config.PodsPerNode above 0).
var podPermissions = []Permission{
	{Verb: "create", Resource: "pods", Namespace: PodNamespace, For: "the fleet creates its pods"},
	{Verb: "get", Resource: "pods", Namespace: PodNamespace, For: "adopt the pods a --keep run left"},
	{Verb: "list", Resource: "pods", Namespace: PodNamespace, For: "the fleet's pod watch"},
	{Verb: "watch", Resource: "pods", Namespace: PodNamespace, For: "the fleet's pod watch"},
	{Verb: "delete", Resource: "pods", Namespace: PodNamespace, For: "cleanup"},
}

// What the fleet's credential does in the heartbeat footprint, whose agents have no pod watch of
// their own: one watch of every pod bound to a node, in every namespace (podwatch.go). Reading every
// pod's spec is a real privilege (their environment, their commands), which
// deploy/rbac/bound-pods.yaml grants apart from the rest.
var boundPodPermissions = []Permission{
	{Verb: "list", Resource: "pods", For: "the fleet's watch of the pods bound to its nodes (heartbeat footprint)"},
	{Verb: "watch", Resource: "pods", For: "the fleet's watch of the pods bound to its nodes (heartbeat footprint)"},
}

// Permissions is every permission the fleet's credential needs for a run of cfg, each once, in the
// order the preflight checks them: the fleet's own (RunPermissions for its first and last node,
// PodPermissions with pods, BoundPodPermissions in the heartbeat footprint, WorkloadPermissions with
// workloads), and with IdentityFleet what its agents send (KubeletPermissions).
func Permissions(cfg Config) []Permission {
	cfg = cfg.WithDefaults()
	first, last := NodeName(cfg.NamePrefix, cfg.FirstIndex), NodeName(cfg.NamePrefix, cfg.FirstIndex+cfg.Nodes-1)
	id := cfg.Identity
	if IdentityOf(cfg) == IdentityByCertificate {
		// Each node's certificate is its credential: the fleet's impersonates no one.
		id = IdentityFleet
	}
	perms := append(RunPermissions(id, first, last), ClaimPermissions(ClaimName(cfg.NamePrefix, cfg.Shard))...)
	if cfg.PodsPerNode > 0 {
		perms = append(perms, PodPermissions()...)
	}
	if cfg.Footprint == agent.FootprintHeartbeat {
		perms = append(perms, boundPodPermissions...)
	}
	if cfg.Workloads != nil {
		perms = append(perms, WorkloadPermissions(WorkloadNamespace(cfg.Fleet, cfg.RunID), *cfg.Workloads)...)
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
func KubeletPermissions(fp agent.Footprint, pods bool, nodes ...string) []Permission {
	var perms []Permission
	for _, k := range agent.Requests(fp, pods) {
		p := Permission{Verb: k.Verb, Group: k.Group, Resource: k.Resource, Subresource: k.Subresource,
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
func grantedByName(p Permission) (func(node string) string, bool) {
	self := func(node string) string { return node }
	switch {
	case p.Group == "" && p.Resource == "nodes" && p.Subresource == "status" && p.Verb == "patch":
		return self, true
	case p.Group == "coordination.k8s.io" && p.Resource == "leases" && p.Verb == "update":
		return self, true
	case p.Group == "" && p.Resource == "serviceaccounts" && p.Subresource == "token":
		return func(string) string { return PodServiceAccount }, true
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
		return PodNamespace
	}
	return ""
}

// unique keeps the first of each permission that perms ask for more than once (the fleet's own
// get of nodes for churn and the kubelets' get of their Nodes; the Events of Nodes and of pods, both
// in namespace default), so that each is checked, and named missing, once.
func unique(perms []Permission) []Permission {
	var out []Permission
	seen := map[Permission]bool{}
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
func BoundPodPermissions() []Permission { return append([]Permission(nil), boundPodPermissions...) }

// PodPermissions is what the fleet's credential needs besides RunPermissions when the run has pods.
func PodPermissions() []Permission {
	return append([]Permission{podNamespacePermission}, podPermissions...)
}

// RunPermissions is what the fleet's credential needs for its own requests in a run with identity
// id; nodes are fleet node names to check impersonation for, the first and last of the run's: RBAC
// grants kubelets by name (deploy/rbac.go), so a grant for fewer nodes than the run's is refused
// before anything is written. With IdentityFleet it impersonates no one, and sends the agents'
// requests itself (KubeletPermissions).
func RunPermissions(id Identity, nodes ...string) []Permission {
	perms := append([]Permission(nil), adminPermissions...)
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
			perms = append(perms, Permission{Verb: "impersonate", Resource: "users", Name: "system:node:" + node, For: "requests as each node's kubelet, --identity=node"})
		}
	}
	return append(perms,
		Permission{Verb: "impersonate", Resource: "groups", Name: "system:nodes", For: "requests as each node's kubelet, --identity=node"},
	)
}

// CleanupPermissions is what `fakelet cleanup` needs before it knows the fleet's names: the lists
// that find its Nodes and their Leases. The deletions are granted by name; one that is refused
// leaves its object, named in the cleanup's *LeftError.
func CleanupPermissions() []Permission {
	var out []Permission
	for _, p := range adminPermissions {
		if p.Verb == "list" {
			out = append(out, p)
		}
	}
	return out
}

// CheckPermissions asks the apiserver, with one SelfSubjectAccessReview each, whether client's
// credential may make every request in perms. It fails listing each one that is denied, so that a
// restricted credential is refused before fakelet writes anything, with all that is missing at once.
func CheckPermissions(ctx context.Context, client kubernetes.Interface, perms []Permission) error {
	var missing []string
	for _, p := range perms {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
				Namespace: p.Namespace, Name: p.Name,
			},
		}}
		rctx, cancel := context.WithTimeout(ctx, checkTimeout)
		got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(rctx, review, metav1.CreateOptions{})
		cancel()
		if err != nil {
			return explainUnreachable(fmt.Errorf("check the credential's permissions (SelfSubjectAccessReview for %s): %w", p, err))
		}
		if !got.Status.Allowed {
			why := p.String() + " (" + p.For
			if got.Status.EvaluationError != "" {
				why += "; " + got.Status.EvaluationError
			}
			missing = append(missing, why+")")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s may not do what fakelet needs; missing %d permission(s): %s. Nothing was written. "+
		"deploy/rbac/fakelet.yaml grants them (and deploy/rbac/fleet-identity.yaml for --identity=fleet, "+
		"deploy/rbac/pods.yaml for pods, deploy/rbac/fleet-identity-pods.yaml for pods with --identity=fleet, "+
		"deploy/rbac/bound-pods.yaml for --footprint heartbeat, deploy/rbac/workloads.yaml for a profile's workloads)",
		whoAmI(ctx, client), len(missing), strings.Join(missing, ", "))
}

// whoAmI names the credential's user, for errors; "the credential" if the server does not say.
func whoAmI(ctx context.Context, client kubernetes.Interface) string {
	rctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(rctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return "the credential"
	}
	return "user " + r.Status.UserInfo.Username
}
