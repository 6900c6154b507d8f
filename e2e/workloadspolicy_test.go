package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// TestWorkloadsPolicyHoldsTheServiceAccount: with deploy/rbac/workloads.yaml, whose ClusterRole lets
// fakelet's ServiceAccount create and delete namespaces and workloads anywhere (RBAC cannot name the
// run's namespace before it exists), its ValidatingAdmissionPolicy lets it create a namespace only
// labelled with a fleet and a run, create workloads only there, and delete only such a namespace: a
// namespace of someone else's can neither be deleted nor have a Deployment created in it.
func TestWorkloadsPolicyHoldsTheServiceAccount(t *testing.T) {
	cp := controlPlane(t)
	c := admin(t, cp)
	ctx := context.Background()
	const sa = "workloads-policy"
	applyWorkloadsPolicy(t, c, "system:serviceaccount:fakelet:"+sa)
	saCfg := rbacFor(t, cp, sa, rbacFile(t, "workloads.yaml"))
	s, err := kubernetes.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	theirs := "someone-elses-" + sa
	createNamespace(t, c, theirs)
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), theirs, metav1.DeleteOptions{}) })
	deployment := func(ns string) *appsv1.Deployment {
		labels := map[string]string{"app": "web"}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: fleet.PodImage}}}},
		}}
	}
	refused := func(err error) bool { return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) }

	// The policy takes a moment to reach the admission plugin: until the unlabelled namespace is
	// refused, try again (and remove one that got through).
	unlabelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled-" + sa}}
	eventually(t, time.Minute, "an unlabelled namespace refused", func() (bool, error) {
		_, err := s.CoreV1().Namespaces().Create(ctx, unlabelled, metav1.CreateOptions{})
		if err == nil {
			_ = c.CoreV1().Namespaces().Delete(ctx, unlabelled.Name, metav1.DeleteOptions{})
			return false, nil
		}
		return refused(err), nil
	})
	if _, err := s.AppsV1().Deployments(theirs).Create(ctx, deployment(theirs), metav1.CreateOptions{}); !refused(err) {
		t.Errorf("a Deployment in someone else's namespace: %v, want it refused", err)
	}
	if err := s.CoreV1().Namespaces().Delete(ctx, theirs, metav1.DeleteOptions{}); !refused(err) {
		t.Errorf("deleting someone else's namespace: %v, want it refused", err)
	}

	ours := fleetname.WorkloadNamespace("blue", "e2e-policy")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ours, Labels: map[string]string{fleetname.Label: "blue", fleet.RunLabel: "e2e-policy"}}}
	if _, err := s.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the run's own namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), ours, metav1.DeleteOptions{}) })
	if _, err := s.AppsV1().Deployments(ours).Create(ctx, deployment(ours), metav1.CreateOptions{}); err != nil {
		t.Errorf("a Deployment in the run's namespace: %v", err)
	}
	if err := s.AppsV1().Deployments(ours).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the run's Deployment: %v", err)
	}
	if err := s.CoreV1().Namespaces().Delete(ctx, ours, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the run's namespace: %v", err)
	}
}

// applyWorkloadsPolicy creates workloads.yaml's ValidatingAdmissionPolicy and its binding for user
// instead of fakelet's ServiceAccount, named for it, and removes them at the end of the test.
func applyWorkloadsPolicy(t *testing.T, c kubernetes.Interface, user string) {
	t.Helper()
	ctx := context.Background()
	suffix := "-" + strings.ReplaceAll(user, ":", "-")
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(rbacFile(t, "workloads.yaml"))))
	var policies int
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch o := obj.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			for i := range o.Spec.MatchConditions {
				e := &o.Spec.MatchConditions[i].Expression
				*e = strings.ReplaceAll(*e, "system:serviceaccount:fakelet:fakelet", user)
			}
			o.Name += suffix
			_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, o, metav1.CreateOptions{})
			policies++
			t.Cleanup(func() {
				_ = c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			o.Name += suffix
			o.Spec.PolicyName += suffix
			_, err = c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, o, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if policies != 1 {
		t.Fatalf("workloads.yaml holds %d ValidatingAdmissionPolicies, want 1", policies)
	}
}
