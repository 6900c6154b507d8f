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

// claimPermission is what a run's claim on its shard of the fleet takes (claim.go).
const claimPermission = "the run's claim on its shard"

// What the fleet's own credential does in every run: the checks, the shared watch, churn and cleanup.
var adminPermissions = []Permission{
	{Verb: "list", Resource: "nodes", For: "check that the fleet's names are free"},
	{Verb: "watch", Resource: "nodes", For: "the fleet's shared node watch"},
	{Verb: "get", Resource: "nodes", For: "churn"},
	{Verb: "delete", Resource: "nodes", For: "cleanup"},
	{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "churn"},
	{Verb: "list", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "cleanup"},
	{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "cleanup"},
	{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: claimPermission},
	{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: claimPermission},
}

// What the fleet's credential does with pods, only when it runs them (Config.PodsPerNode above 0).
var podPermissions = []Permission{
	{Verb: "create", Resource: "pods", Namespace: PodNamespace, For: "the fleet creates its pods"},
	{Verb: "get", Resource: "pods", Namespace: PodNamespace, For: "adopt the pods a --keep run left"},
	{Verb: "list", Resource: "pods", Namespace: PodNamespace, For: "the fleet's pod watch"},
	{Verb: "watch", Resource: "pods", Namespace: PodNamespace, For: "the fleet's pod watch"},
	{Verb: "delete", Resource: "pods", Namespace: PodNamespace, For: "cleanup"},
}

// Permissions is every permission the fleet's credential needs for a run of cfg, each once, in the
// order the preflight checks them: the fleet's own (RunPermissions for its first and last node,
// PodPermissions with pods), and with IdentityFleet what its agents send (KubeletPermissions).
func Permissions(cfg Config) []Permission {
	cfg = cfg.WithDefaults()
	perms := RunPermissions(cfg.Identity, NodeName(cfg.NamePrefix, cfg.FirstIndex), NodeName(cfg.NamePrefix, cfg.FirstIndex+cfg.Nodes-1))
	if IdentityOf(cfg) == IdentityByCertificate {
		// Each node's certificate is its credential: the fleet's impersonates no one.
		perms = append([]Permission(nil), adminPermissions...)
	}
	if cfg.PodsPerNode > 0 {
		perms = append(perms, PodPermissions()...)
	}
	if cfg.Identity == IdentityFleet {
		perms = append(perms, KubeletPermissions(cfg.Footprint, cfg.PodsPerNode > 0)...)
	}
	return unique(perms)
}

// KubeletPermissions is what agents of footprint fp send, with pods bound to their nodes or
// without, as permissions of the fleet's credential, which sends their requests itself with
// --identity=fleet (as nodes, the Node authorizer grants them). It is agent.Requests, the agent's
// own table of what it sends, in the fleet's namespaces.
func KubeletPermissions(fp agent.Footprint, pods bool) []Permission {
	var perms []Permission
	for _, k := range agent.Requests(fp, pods) {
		perms = append(perms, Permission{Verb: k.Verb, Group: k.Group, Resource: k.Resource, Subresource: k.Subresource,
			Namespace: scopeNamespace(k.Scope), For: k.For})
	}
	return unique(perms)
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

// PodPermissions is what the fleet's credential needs besides RunPermissions when the run has pods.
func PodPermissions() []Permission {
	return append([]Permission(nil), podPermissions...)
}

// RunPermissions is what the fleet's credential needs for its own requests in a run with identity
// id; nodes are fleet node names to check impersonation for, the first and last of the run's: RBAC
// grants kubelets by name (deploy/rbac.go), so a grant for fewer nodes than the run's is refused
// before anything is written. With IdentityFleet it impersonates no one, and sends the agents'
// requests itself (KubeletPermissions).
func RunPermissions(id Identity, nodes ...string) []Permission {
	perms := append([]Permission(nil), adminPermissions...)
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

// CleanupPermissions is what `fakelet cleanup` needs.
func CleanupPermissions() []Permission {
	var out []Permission
	for _, p := range adminPermissions {
		if p.For == "cleanup" || p.Verb == "list" && p.Resource == "nodes" {
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
		"deploy/rbac/pods.yaml for pods, deploy/rbac/fleet-identity-pods.yaml for pods with --identity=fleet)",
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
