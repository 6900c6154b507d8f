// Package access holds what fakelet's own credential must be allowed to do (Permission) and the one
// check of it against a cluster (Check), with one SelfSubjectAccessReview each, before anything is
// written; and what a user can do about a cluster that cannot be talked to at all (reach.go).
package access

import (
	"context"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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

// Check asks the apiserver, with one SelfSubjectAccessReview each, whether client's
// credential may make every request in perms. It fails listing each one that is denied, so that a
// restricted credential is refused before fakelet writes anything, with all that is missing at once.
func Check(ctx context.Context, client kubernetes.Interface, perms []Permission) error {
	var missing []string
	for _, p := range perms {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
				Namespace: p.Namespace, Name: p.Name,
			},
		}}
		rctx, cancel := context.WithTimeout(ctx, CheckTimeout)
		got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(rctx, review, metav1.CreateOptions{})
		cancel()
		if err != nil {
			return ExplainUnreachable(fmt.Errorf("check the credential's permissions (SelfSubjectAccessReview for %s): %w", p, err))
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
	rctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	r, err := client.AuthenticationV1().SelfSubjectReviews().Create(rctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return "the credential"
	}
	return "user " + r.Status.UserInfo.Username
}
