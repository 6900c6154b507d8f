package e2e

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/fleet"
)

// TestDeployRBACImpersonatesOnlyTheFleet: the ServiceAccount of deploy/rbac/fakelet.yaml may
// impersonate the kubelets of fakelet-00000 to fakelet-00999 in group system:nodes and no one else:
// its access reviews for system:kube-controller-manager, system:admin, another fleet's kubelet and
// the group system:masters are denied, and a request impersonating them is refused, also when the
// user is one of the fleet's kubelets and only the group is another. A fleet of the file's names
// still runs with it and cleans up.
func TestDeployRBACImpersonatesOnlyTheFleet(t *testing.T) {
	cp := controlPlane(t)
	sa := serviceAccountConfig(t, cp)
	c, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		resource, name string
		allowed        bool
	}{
		{"users", "system:node:fakelet-00000", true},
		{"users", "system:node:fakelet-00999", true},
		{"groups", "system:nodes", true},
		{"users", "system:kube-controller-manager", false},
		{"users", "system:admin", false},
		{"users", "fakelet-admin", false},
		{"users", "system:node:fakelet-01000", false},
		{"users", "system:node:other-00000", false},
		{"groups", "system:masters", false},
		{"uids", "", false},
		{"userextras", "scopes", false},
	} {
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: tc.resource, Name: tc.name},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != tc.allowed {
			t.Errorf("impersonate %s %q: allowed %v, want %v", tc.resource, tc.name, r.Status.Allowed, tc.allowed)
		}
	}

	for _, as := range []rest.ImpersonationConfig{
		{UserName: "system:kube-controller-manager"},
		{UserName: "system:admin", Groups: []string{"system:masters"}},
		{UserName: "system:node:fakelet-00000", Groups: []string{"system:masters"}},
		{UserName: "system:node:other-00000", Groups: []string{"system:nodes"}},
	} {
		cfg := rest.CopyConfig(sa)
		cfg.Impersonate = as
		ic, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ic.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{Limit: 1})
		if !apierrors.IsForbidden(err) {
			t.Errorf("list secrets as %s in %q: %v, want the impersonation forbidden", as.UserName, as.Groups, err)
		}
	}

	// The file's own names, from its end so as not to meet other tests' fakelet-00000.
	rf := runFleet(t, sa, fleet.Config{Nodes: 3, FirstIndex: 997, Fleet: "impersonation", Template: smallNodes})
	rf.waitReady(t, 3, 60*time.Second)
	if err := rf.stop(); err != nil {
		t.Errorf("run and cleanup with fakelet.yaml's credential: %v", err)
	}
	if left := fleetNodes(t, admin(t, cp), "impersonation"); len(left) != 0 {
		t.Errorf("%d nodes left after cleanup", len(left))
		for _, n := range left {
			// What the cleanup could have missed: a Node of another UID than the agent's, one still
			// being deleted, one of another run.
			t.Logf("left: node %s, uid %s, created %v, deletion %v, annotations %v", n.Name, n.UID, n.CreationTimestamp, n.DeletionTimestamp, n.Annotations)
		}
		for _, a := range rf.Agents() {
			nu, lu := a.Owned()
			t.Logf("agent %s owned node %q and lease %q (error %v)", a.Name(), nu, lu, a.Err())
		}
	}
}
