package fleet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/fleetname"
)

// The fleet's pods live in a namespace of fakelet's own, PodNamespace, never in one that holds
// anything else: the fleet's credential may create pods there and, with --identity=fleet, tokens of
// its pods' ServiceAccount, and its impersonated kubelets may read what the pods bound to them
// reference. A pod there can reference only that namespace's Secrets and ServiceAccounts, which
// hold nothing of anyone else's; in default, it could mount any Secret of default and read it as its
// node.
//
// deploy/rbac/pods.yaml creates the namespace with the grants in it. Where it does not exist (the
// local control plane) the fleet creates it labelled with its fleet, and the cleanup deletes it
// again once it holds no pod; a namespace that someone else created is never deleted.

// podNamespacePermission is what the fleet needs to find its pods' namespace; it creates the namespace
// only where it is missing, which deploy's RBAC never leaves it.
var podNamespacePermission = access.Permission{Verb: "get", Resource: "namespaces", Name: fleetname.PodNamespace, For: "find the pods' namespace"}

// podNamespaceGoneTimeout bounds the wait for the pods' namespace that an earlier run's cleanup is
// deleting: the namespace controller deletes what is left in it first, seconds for an empty one.
const podNamespaceGoneTimeout = 2 * time.Minute

// EnsurePodNamespace creates PodNamespace, labelled with the fleet and annotated with the run (if
// runID is set), unless it exists. One being deleted (an earlier run's cleanup) admits no pod: it waits until it is gone.
func EnsurePodNamespace(ctx context.Context, client kubernetes.Interface, fleetName, runID string) error {
	ns, err := client.CoreV1().Namespaces().Get(ctx, fleetname.PodNamespace, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		return nil
	}
	if err == nil {
		err = waitNamespaceGone(ctx, client, ns)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("get the pods' namespace %s: %w", fleetname.PodNamespace, err)
	}
	created := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   fleetname.PodNamespace,
		Labels: map[string]string{fleetname.Label: fleetName},
	}}
	if runID != "" {
		created.Annotations = map[string]string{fleetname.RunAnnotation: runID}
	}
	_, err = client.CoreV1().Namespaces().Create(ctx, created, metav1.CreateOptions{})
	switch {
	case err == nil || apierrors.IsAlreadyExists(err): // created by another fleet's run since the get
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("create the pods' namespace %s: %w (deploy/rbac/pods.yaml creates it with the grants the fleet's pods need)", fleetname.PodNamespace, err)
	}
	return fmt.Errorf("create the pods' namespace %s: %w", fleetname.PodNamespace, err)
}

// waitNamespaceGone waits until ns, being deleted, is gone, and returns a NotFound error then.
func waitNamespaceGone(ctx context.Context, client kubernetes.Interface, ns *corev1.Namespace) error {
	ctx, cancel := context.WithTimeout(ctx, podNamespaceGoneTimeout)
	defer cancel()
	w, err := client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", ns.Name).String(), ResourceVersion: ns.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watch namespace %s being deleted: %w", ns.Name, err)
	}
	defer w.Stop()
	// It may have gone between the get and the watch.
	if _, err := client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err != nil {
		return err
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("namespace %s is being deleted, and its watch ended", ns.Name)
			}
			if ev.Type == watch.Deleted {
				return apierrors.NewNotFound(corev1.Resource("namespaces"), ns.Name)
			}
		case <-ctx.Done():
			return fmt.Errorf("namespace %s is being deleted and still there after %v: %w", ns.Name, podNamespaceGoneTimeout, ctx.Err())
		}
	}
}

// DeletePodNamespace deletes PodNamespace if fakelet created it for fleetName (its label says so) and
// it holds no pod, on the UID it saw: a namespace of the deploy's RBAC, or one where another fleet's
// pods run, stays.
func DeletePodNamespace(ctx context.Context, client kubernetes.Interface, fleetName string) error {
	ns, err := client.CoreV1().Namespaces().Get(ctx, fleetname.PodNamespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get the pods' namespace %s: %w", fleetname.PodNamespace, err)
	}
	if ns.Labels[fleetname.Label] != fleetName || ns.DeletionTimestamp != nil {
		return nil
	}
	pods, err := client.CoreV1().Pods(fleetname.PodNamespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("list the pods left in namespace %s: %w", fleetname.PodNamespace, err)
	}
	if len(pods.Items) > 0 {
		return nil
	}
	err = client.CoreV1().Namespaces().Delete(ctx, fleetname.PodNamespace, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}})
	return ignoreGone(err, "delete the pods' namespace "+fleetname.PodNamespace)
}
