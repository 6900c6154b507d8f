package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// TestPodsNeedDeployRBACPods: with deploy/rbac/fakelet.yaml alone a fleet with pods is refused before
// it writes anything, naming the pod permissions; with deploy/rbac/pods.yaml as well it runs: its pods
// are created in the namespace pods.yaml creates, reported Ready by the fake kubelets as their nodes,
// and deleted at the end; the namespace, which the fleet did not create, stays.
func TestPodsNeedDeployRBACPods(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	sa := serviceAccountConfig(t, cp)
	cfg := fleet.Config{Nodes: 2, Fleet: "rbacpods", NamePrefix: "rbacpods", Template: smallNodes, PodsPerNode: 2}

	err := runOnce(t, cfg, sa)
	t.Log(err)
	for _, want := range []string{"missing 6 permission(s): get namespaces fakelet-pods (find the pods' namespace), create pods in fakelet-pods (the fleet creates its pods)",
		"watch pods in fakelet-pods", "delete pods in fakelet-pods", "deploy/rbac/pods.yaml for pods"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q", want)
		}
	}
	nothingWritten(t, c, "rbacpods")

	applyPodsRBAC(t, c)
	rf := runFleet(t, sa, cfg)
	eventually(t, 60*time.Second, "4 Ready pods", func() (bool, error) { return rf.Progress().PodsReady == 4, nil })
	if err := rf.stop(); err != nil {
		t.Errorf("run and cleanup with pods.yaml's credential: %v", err)
	}
	pods, err := c.CoreV1().Pods(fleetname.PodNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: fleetname.Label + "=rbacpods"})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("%d pods left after the cleanup (%v)", len(pods.Items), err)
	}
	if ns, err := c.CoreV1().Namespaces().Get(context.Background(), fleetname.PodNamespace, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("namespace %s of deploy/rbac/pods.yaml after the cleanup: %v, %v; want it left", fleetname.PodNamespace, err, ns.DeletionTimestamp)
	}
}

// applyPodsRBAC creates the namespace and roles of deploy/rbac/pods.yaml and waits until they apply.
func applyPodsRBAC(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile("../deploy/rbac/pods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode deploy/rbac/pods.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			createNamespace(t, c, o.Name)
		case *rbacv1.ClusterRole:
			_, err = c.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = c.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("unexpected %T in deploy/rbac/pods.yaml", obj)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "RBAC of deploy/rbac/pods.yaml applied", func() (bool, error) {
		r, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:fakelet:fakelet", Groups: []string{"system:serviceaccounts"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods", Namespace: fleetname.PodNamespace},
		}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
}
