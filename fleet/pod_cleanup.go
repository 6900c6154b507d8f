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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/fleetname"
)

// fleetPods lists the pods in PodNamespace labelled with fleet and bound to one of nodes. A
// credential that may not list pods gets none and no error: it cannot have created any either.
func fleetPods(ctx context.Context, client kubernetes.Interface, fleet string, nodes map[string]bool) ([]corev1.Pod, error) {
	var out []corev1.Pod
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{fleetname.Label: fleet}).String(), Limit: 500}
	for {
		list, err := client.CoreV1().Pods(fleetname.PodNamespace).List(ctx, opts)
		if apierrors.IsForbidden(err) {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("list fleet %s's pods: %w", fleet, err)
		}
		for _, p := range list.Items {
			if nodes[p.Spec.NodeName] {
				out = append(out, p)
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// deletePod deletes a pod of the fleet at once (its kubelet is fakelet: no one else would confirm a
// graceful deletion), on its UID. It returns whether it deleted it; a pod already gone or replaced is
// not an error.
func deletePod(ctx context.Context, client kubernetes.Interface, name string, uid types.UID) (bool, error) {
	opts := uidPrecondition(uid)
	opts.GracePeriodSeconds = ptr.To[int64](0)
	err := client.CoreV1().Pods(fleetname.PodNamespace).Delete(ctx, name, opts)
	if err == nil {
		return true, nil
	}
	return false, ignoreGone(err, "delete pod "+fleetname.PodNamespace+"/"+name)
}

// deleteCreatedPods deletes the pods the fleet created (those named in created, on their UIDs) and
// returns the names of those it deleted.
func deleteCreatedPods(ctx context.Context, client kubernetes.Interface, created map[string]types.UID) ([]string, error) {
	var deleted []string
	var errs []error
	for name, uid := range created {
		ok, err := deletePod(ctx, client, name, uid)
		if err != nil {
			errs = append(errs, err)
		} else if ok {
			deleted = append(deleted, name)
		}
	}
	sort.Strings(deleted)
	return deleted, errors.Join(errs...)
}

// deleteNodePods deletes the pods the fleet created on node, for RemoveNodes: a node removed in a
// scale-down takes its pods with it.
func (f *Fleet) deleteNodePods(ctx context.Context, node string) error {
	if f.pods == nil {
		return nil
	}
	created := map[string]types.UID{}
	for i := range f.cfg.PodsPerNode {
		if uid, ok := f.pods.createdUID(PodName(node, i)); ok {
			created[PodName(node, i)] = uid
		}
	}
	_, err := deleteCreatedPods(ctx, f.admin, created)
	return err
}
