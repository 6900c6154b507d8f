package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// deployedRBAC applies every file of deploy/rbac (fakelet.yaml, fleet-identity.yaml, pods.yaml,
// fleet-identity-pods.yaml, bound-pods.yaml, workloads.yaml with its admission policy: all that a
// deployment grants) to the ServiceAccount fakelet/deployed, and returns its client and a client of
// it impersonating the kubelet of fakelet-00000, as a run does.
func deployedRBAC(t *testing.T, cp *controlplane.ControlPlane) (sa, asNode kubernetes.Interface, saCfg *rest.Config) {
	t.Helper()
	applyWorkloadsPolicy(t, admin(t, cp), "system:serviceaccount:fakelet:deployed")
	saCfg = rbacFor(t, cp, "deployed", rbacFile(t, "fakelet.yaml"), rbacFile(t, "fleet-identity.yaml"),
		rbacFile(t, "pods.yaml"), rbacFile(t, "fleet-identity-pods.yaml"), rbacFile(t, "bound-pods.yaml"), rbacFile(t, "workloads.yaml"))
	sa, err := kubernetes.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	nodeCfg := rest.CopyConfig(saCfg)
	nodeCfg.Impersonate = rest.ImpersonationConfig{UserName: controlplane.NodeUser("fakelet-00000"), Groups: []string{controlplane.NodesGroup}}
	asNode, err = kubernetes.NewForConfig(nodeCfg)
	if err != nil {
		t.Fatal(err)
	}
	return sa, asNode, saCfg
}

// allowed asks the apiserver whether c's credential may do attrs.
func allowed(t *testing.T, c kubernetes.Interface, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// TestDeployRBACCannotTouchARealNode: with all that deploy/rbac grants, fakelet's ServiceAccount, and
// the fleet's kubelets it impersonates, can neither delete a Node created outside the fleet nor patch
// its status nor renew or delete its Lease: no real node is marked NotReady, loses its Lease or is
// deleted, and so none has its pods evicted. The same writes to the fleet's own Nodes and Leases are
// allowed.
func TestDeployRBACCannotTouchARealNode(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	ctx := context.Background()
	sa, asNode, _ := deployedRBAC(t, cp)

	const real = "real-worker-1"
	node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: real, Labels: map[string]string{"team": "prod"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CoreV1().Nodes().Delete(context.Background(), real, metav1.DeleteOptions{}) })
	now := metav1.NewMicroTime(time.Now())
	lease, err := c.CoordinationV1().Leases(agent.LeaseNamespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: real},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(real), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.CoordinationV1().Leases(agent.LeaseNamespace).Delete(context.Background(), real, metav1.DeleteOptions{})
	})

	notReady := []byte(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady"}]}}`)
	for who, client := range map[string]kubernetes.Interface{"the ServiceAccount": sa, "the impersonated kubelet of fakelet-00000": asNode} {
		for what, write := range map[string]func() error{
			"delete the Node": func() error { return client.CoreV1().Nodes().Delete(ctx, real, metav1.DeleteOptions{}) },
			"patch the Node's status NotReady": func() error {
				_, err := client.CoreV1().Nodes().Patch(ctx, real, types.StrategicMergePatchType, notReady, metav1.PatchOptions{}, "status")
				return err
			},
			"renew the Lease": func() error {
				l := lease.DeepCopy()
				l.Spec.HolderIdentity = ptr.To("fakelet-00000")
				_, err := client.CoordinationV1().Leases(agent.LeaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
				return err
			},
			"delete the Lease": func() error {
				return client.CoordinationV1().Leases(agent.LeaseNamespace).Delete(ctx, real, metav1.DeleteOptions{})
			},
		} {
			if err := write(); !apierrors.IsForbidden(err) {
				t.Errorf("%s may %s of %s: %v, want forbidden", who, what, real, err)
			}
		}
	}
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Verb: "delete", Resource: "nodes", Name: "fakelet-00999"},
		{Verb: "patch", Resource: "nodes", Subresource: "status", Name: "fakelet-00000"},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: "fakelet-00999"},
		{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace, Name: "fakelet-00000"},
	} {
		if !allowed(t, sa, attrs) {
			t.Errorf("the ServiceAccount may not %s %s %s of the fleet", attrs.Verb, attrs.Resource, attrs.Name)
		}
	}
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Verb: "delete", Resource: "nodes", Name: "fakelet-01000"},
		{Verb: "delete", Resource: "nodes"},
		{Verb: "deletecollection", Resource: "nodes"},
		{Verb: "update", Resource: "nodes", Name: real},
		{Verb: "patch", Resource: "nodes", Name: real},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace},
		{Verb: "deletecollection", Group: "coordination.k8s.io", Resource: "leases", Namespace: agent.LeaseNamespace},
	} {
		if allowed(t, sa, attrs) {
			t.Errorf("the ServiceAccount may %s %s %q", attrs.Verb, attrs.Resource, attrs.Name)
		}
	}
	// The node lifecycle controller taints a Node that never reported: only the Node's UID and
	// status conditions (which no one else writes) and the Lease can be compared.
	after, err := c.CoreV1().Nodes().Get(ctx, real, metav1.GetOptions{})
	if err != nil {
		t.Errorf("%s: %v", real, err)
	} else if after.UID != node.UID || len(after.Status.Conditions) != 0 {
		t.Errorf("%s changed: UID %s, conditions %+v", real, after.UID, after.Status.Conditions)
	}
	afterLease, err := c.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, real, metav1.GetOptions{})
	if err != nil || afterLease.ResourceVersion != lease.ResourceVersion {
		t.Errorf("the Lease of %s changed: %v", real, err)
	}
}

// TestDeployRBACReadsNoSecretThroughAFleetPod: the path of issue 28's item 11 is closed. With all that
// deploy/rbac grants, fakelet's ServiceAccount cannot create a pod in default (or any namespace but
// the fleet's own) mounting a Secret of that namespace, so its impersonated kubelet, to whose node
// the pod would be bound, cannot read the Secret; a pod it creates in fakelet-pods can reference only
// fakelet-pods' Secrets, none of which is anyone else's. Nor can it request a token for any
// ServiceAccount but the one of the fleet's pods.
func TestDeployRBACReadsNoSecretThroughAFleetPod(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	ctx := context.Background()
	sa, asNode, _ := deployedRBAC(t, cp)

	const bait = "fakelet-e2e-bait"
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		if _, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: bait},
			StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CoreV1().Secrets(ns).Delete(context.Background(), bait, metav1.DeleteOptions{}) })
	}
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: bait, Namespace: ns},
			Spec: corev1.PodSpec{
				NodeName:   "fakelet-00000",
				Containers: []corev1.Container{{Name: "c", Image: fleet.PodImage, VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}}},
				Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: bait}}}},
			},
		}
	}
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		// Else the ServiceAccount admission plugin refuses the pod, forbidden for another reason.
		eventually(t, time.Minute, "ServiceAccount "+ns+"/default", func() (bool, error) {
			_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		_, err := sa.CoreV1().Pods(ns).Create(ctx, pod(ns), metav1.CreateOptions{})
		t.Logf("create pod %s/%s as the ServiceAccount: %v", ns, bait, err)
		if !apierrors.IsForbidden(err) {
			t.Errorf("the ServiceAccount creates a pod in %s mounting its Secret %s, bound to a fleet node: %v, want forbidden", ns, bait, err)
			c.CoreV1().Pods(ns).Delete(ctx, bait, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		if _, err := asNode.CoreV1().Secrets(ns).Get(ctx, bait, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the fleet's kubelet reads Secret %s/%s: %v, want forbidden", ns, bait, err)
		}
		// workloads.yaml grants Deployments in every namespace (the run's has no name before it
		// starts); its admission policy holds them to the runs' labelled namespaces, so none here
		// gets a pod scheduled onto a fleet node with the Secret mounted.
		p := pod(ns)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: bait, Namespace: ns}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": bait}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": bait}},
				Spec: corev1.PodSpec{Containers: p.Spec.Containers, Volumes: p.Spec.Volumes}},
		}}
		eventually(t, time.Minute, "a Deployment in "+ns+" refused", func() (bool, error) {
			_, err := sa.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
			if err == nil {
				_ = c.AppsV1().Deployments(ns).Delete(ctx, bait, metav1.DeleteOptions{})
				return false, nil
			}
			return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
		})
	}
	// In the fleet's own namespace the pod is created (once its default ServiceAccount exists), and
	// its node may read only what is there: no Secret of that name.
	eventually(t, time.Minute, "a pod in "+fleetname.PodNamespace, func() (bool, error) {
		_, err := sa.CoreV1().Pods(fleetname.PodNamespace).Create(ctx, pod(fleetname.PodNamespace), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	t.Cleanup(func() {
		c.CoreV1().Pods(fleetname.PodNamespace).Delete(context.Background(), bait, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	// The Node authorizer learns of the pod from a watch of its own, a moment after the create's
	// answer: until then the node is refused ("no relationship found"), as a kubelet is.
	eventually(t, time.Minute, "the fleet's kubelet may read Secret "+fleetname.PodNamespace+"/"+bait+" of its pod", func() (bool, error) {
		_, err := asNode.CoreV1().Secrets(fleetname.PodNamespace).Get(ctx, bait, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil // it may read it, and there is none
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "no relationship found"):
			return false, nil
		}
		return false, fmt.Errorf("read Secret %s/%s: %v, want not found", fleetname.PodNamespace, bait, err)
	})
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: metav1.NamespaceDefault, Name: "default"},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: metav1.NamespaceSystem, Name: "default"},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: fleetname.PodNamespace, Name: "other"},
		{Verb: "create", Resource: "pods", Namespace: metav1.NamespaceDefault},
		{Verb: "get", Resource: "secrets", Namespace: fleetname.PodNamespace},
		{Verb: "create", Resource: "secrets", Namespace: fleetname.PodNamespace},
		{Verb: "create", Resource: "serviceaccounts", Namespace: fleetname.PodNamespace},
	} {
		if allowed(t, sa, attrs) {
			t.Errorf("the ServiceAccount may %s %s/%s %q in %s", attrs.Verb, attrs.Resource, attrs.Subresource, attrs.Name, attrs.Namespace)
		}
	}
	if !allowed(t, sa, authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Subresource: "token",
		Namespace: fleetname.PodNamespace, Name: fleetname.PodServiceAccount}) {
		t.Errorf("the ServiceAccount may not request its pods' tokens (--identity=fleet)")
	}
}
