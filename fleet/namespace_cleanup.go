package fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/fleetname"
)

// RunLabel names, with fleetname.Label, the run that created a namespace of workloads (and every
// object in it): fakelet cleanup finds what a crashed or killed run left by the two.
const RunLabel = "fakelet.dev/run"

// runNamespaces lists the namespaces labelled with fleet and a run, the ones its runs created for
// their workloads, that are not being deleted already. A credential that may not list namespaces
// gets none and no error.
func runNamespaces(ctx context.Context, client kubernetes.Interface, fleet string) ([]corev1.Namespace, error) {
	sel := labels.SelectorFromSet(labels.Set{fleetname.Label: fleet})
	run, err := labels.NewRequirement(RunLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	sel = sel.Add(*run)
	var out []corev1.Namespace
	opts := metav1.ListOptions{LabelSelector: sel.String(), Limit: 500}
	for {
		list, err := client.CoreV1().Namespaces().List(ctx, opts)
		if apierrors.IsForbidden(err) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("list fleet %s's workload namespaces: %w", fleet, err)
		}
		for _, ns := range list.Items {
			// The selector is the server's; the check is ours, as for every object fakelet deletes.
			if ns.Labels[fleetname.Label] == fleet && ns.Labels[RunLabel] != "" && ns.DeletionTimestamp == nil {
				out = append(out, ns)
			}
		}
		if list.Continue == "" {
			sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// deleteRunNamespaces deletes namespaces, each on the UID it was listed with (the namespace
// controller deletes what is in it), and returns the names of those it deleted; one already gone,
// or replaced by another of its name, is not an error.
func deleteRunNamespaces(ctx context.Context, client kubernetes.Interface, namespaces []corev1.Namespace) ([]string, error) {
	var deleted []string
	var errs []error
	for _, ns := range namespaces {
		err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, uidPrecondition(ns.UID))
		if err == nil {
			deleted = append(deleted, ns.Name)
		} else if err = ignoreGone(err, "delete namespace "+ns.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return deleted, errors.Join(errs...)
}

// deletePodNamespaceLeft is DeletePodNamespace for fakelet cleanup, whose credential may have no
// grant on the pods' namespace (a fleet without pods): refused, it leaves it.
func deletePodNamespaceLeft(ctx context.Context, client kubernetes.Interface, fleet string) error {
	if err := DeletePodNamespace(ctx, client, fleet); err != nil && !apierrors.IsForbidden(err) {
		return err
	}
	return nil
}

// DeleteFleetAndNamespaces is DeleteFleet and, for the whole fleet (Mine nil), the namespaces of
// workloads that runs of the fleet left (labelled with the fleet and a RunLabel) and PodNamespace if
// the fleet created it and no pod is left in it: fakelet cleanup. The namespaces are listed before
// DeleteFleet reads the Nodes whose heartbeats say whether a run is live, so that a run started after
// the list is not in it, and deleted only once DeleteFleet found no live run (or was forced), each on
// the UID it was listed with.
func DeleteFleetAndNamespaces(ctx context.Context, client kubernetes.Interface, o CleanupOptions) (Deleted, error) {
	var namespaces []corev1.Namespace
	if o.Mine == nil { // a run's namespace is the whole fleet's, not a part's
		var err error
		if namespaces, err = runNamespaces(ctx, client, o.Fleet); err != nil {
			return Deleted{}, err
		}
	}
	deleted, err := DeleteFleet(ctx, client, o)
	var left *LeftError
	if err != nil && !errors.As(err, &left) {
		return deleted, err // a live run, or no answer as to whether one is
	}
	if o.DryRun {
		for _, ns := range namespaces {
			deleted.Namespaces = append(deleted.Namespaces, ns.Name)
		}
		return deleted, err
	}
	var nsErr error
	deleted.Namespaces, nsErr = deleteRunNamespaces(ctx, client, namespaces)
	if o.Mine == nil {
		nsErr = errors.Join(nsErr, deletePodNamespaceLeft(ctx, client, o.Fleet))
	}
	return deleted, errors.Join(err, nsErr)
}
