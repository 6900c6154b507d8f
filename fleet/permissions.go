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

// What the fleet's own credential does in every run: the checks, the shared watch, churn and cleanup.
var adminPermissions = []Permission{
	{Verb: "list", Resource: "nodes", For: "check that the fleet's names are free"},
	{Verb: "watch", Resource: "nodes", For: "the fleet's shared node watch"},
	{Verb: "get", Resource: "nodes", For: "churn"},
	{Verb: "delete", Resource: "nodes", For: "cleanup"},
	{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "churn"},
	{Verb: "list", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "cleanup"},
	{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "cleanup"},
}

// What kubelets send, needed by the fleet's credential itself with --identity=fleet.
var kubeletPermissions = []Permission{
	{Verb: "create", Resource: "nodes", For: "kubelets register their Nodes"},
	{Verb: "get", Resource: "nodes", For: "kubelets read their Nodes"},
	{Verb: "patch", Resource: "nodes", Subresource: "status", For: "kubelets patch their node status"},
	{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "kubelets read their Leases"},
	{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "kubelets create their Leases"},
	{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, For: "kubelets renew their Leases"},
}

// What the fleet's credential does with pods, only when it runs them (Config.PodsPerNode above 0).
var podPermissions = []Permission{
	{Verb: "create", Resource: "pods", Namespace: PodNamespace, For: "the fleet creates its pods"},
	{Verb: "get", Resource: "pods", Namespace: PodNamespace, For: "adopt the pods a --keep run left"},
	{Verb: "list", Resource: "pods", Namespace: PodNamespace, For: "the fleet's pod watch"},
	{Verb: "watch", Resource: "pods", Namespace: PodNamespace, For: "the fleet's pod watch"},
	{Verb: "delete", Resource: "pods", Namespace: PodNamespace, For: "cleanup"},
}

// What kubelets do with their pods, needed by the fleet's credential itself with --identity=fleet.
var kubeletPodPermissions = []Permission{
	{Verb: "patch", Resource: "pods", Subresource: "status", Namespace: PodNamespace, For: "kubelets report their pods Running and Ready"},
}

// What the kubelet footprint sends besides the heartbeats, needed by the fleet's credential itself
// with --identity=fleet; as nodes, the Node authorizer grants it.
var kubeletFootprintPermissions = []Permission{
	{Verb: "watch", Resource: "nodes", For: "kubelets watch their Nodes"},
	{Verb: "watch", Resource: "pods", For: "kubelets watch their pods"},
	{Verb: "watch", Resource: "services", For: "kubelets watch Services"},
	{Verb: "watch", Group: "node.k8s.io", Resource: "runtimeclasses", For: "kubelets watch RuntimeClasses"},
	{Verb: "watch", Group: "storage.k8s.io", Resource: "csidrivers", For: "kubelets watch CSIDrivers"},
	{Verb: "watch", Group: "certificates.k8s.io", Resource: "podcertificaterequests", For: "kubelets watch their PodCertificateRequests"},
	{Verb: "get", Group: "storage.k8s.io", Resource: "csinodes", For: "kubelets read their CSINodes"},
	{Verb: "create", Group: "storage.k8s.io", Resource: "csinodes", For: "kubelets create their CSINodes"},
	{Verb: "create", Resource: "events", For: "kubelets record Events"},
	{Verb: "patch", Resource: "events", For: "kubelets count repeated Events"},
	{Verb: "get", Resource: "pods", For: "kubelets read a pod before each status patch"},
	{Verb: "watch", Resource: "configmaps", Namespace: PodNamespace, For: "kubelets watch the kube-root-ca.crt their pods' token volumes read"},
	{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: PodNamespace, For: "kubelets request their pods' service account tokens"},
}

// FootprintPermissions is what the fleet's credential needs besides RunPermissions for footprint fp.
func FootprintPermissions(id Identity, fp agent.Footprint) []Permission {
	if id != IdentityFleet || fp != agent.FootprintKubelet {
		return nil
	}
	return kubeletFootprintPermissions
}

// PodPermissions is what the fleet's credential needs besides RunPermissions when the run has pods.
func PodPermissions(id Identity) []Permission {
	perms := append([]Permission(nil), podPermissions...)
	if id == IdentityFleet {
		perms = append(perms, kubeletPodPermissions...)
	}
	return perms
}

// RunPermissions is what the fleet's credential needs for a run with identity id; nodes are fleet
// node names to check impersonation for, the first and last of the run's: RBAC grants kubelets by
// name (deploy/rbac.go), so a grant for fewer nodes than the run's is refused before anything is written.
func RunPermissions(id Identity, nodes ...string) []Permission {
	perms := append([]Permission(nil), adminPermissions...)
	if id == IdentityFleet {
		return append(perms, kubeletPermissions...)
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
		"deploy/rbac/pods.yaml for pods)",
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
