package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
)

// cleanupWorkers is how many deletions run at once.
const cleanupWorkers = 16

// Cleanup deletes the fleet's Nodes (those with its names and its fleet label) and the Leases those
// Nodes own. Each delete is conditional on the UID fakelet saw, so an object someone else created in
// the meantime under the same name is never deleted.
func (f *Fleet) Cleanup(ctx context.Context) error {
	return DeleteFleet(ctx, f.admin, f.cfg.Fleet, f.holds)
}

// DeleteFleet deletes the Nodes labelled fakelet.dev/fleet=fleet whose names mine accepts (nil: all),
// and the Leases in kube-node-lease that those Nodes own.
func DeleteFleet(ctx context.Context, client kubernetes.Interface, fleet string, mine func(name string) bool) error {
	selector := labels.SelectorFromSet(labels.Set{agent.FleetLabel: fleet}).String()
	var nodes []corev1.Node
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 500}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list fleet %s's nodes: %w", fleet, err)
		}
		for _, n := range list.Items {
			if mine == nil || mine(n.Name) {
				nodes = append(nodes, n)
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	owners := make(map[types.UID]bool, len(nodes))
	for _, n := range nodes {
		owners[n.UID] = true
	}
	leases, err := ownedLeases(ctx, client, owners)
	if err != nil {
		return err
	}

	work := make(chan func() error)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range cleanupWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for del := range work {
				if err := del(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, l := range leases {
		work <- func() error {
			err := client.CoordinationV1().Leases(agent.LeaseNamespace).Delete(ctx, l.Name, uidPrecondition(l.UID))
			return ignoreGone(err, "delete lease "+l.Name)
		}
	}
	for _, n := range nodes {
		work <- func() error {
			err := client.CoreV1().Nodes().Delete(ctx, n.Name, uidPrecondition(n.UID))
			return ignoreGone(err, "delete node "+n.Name)
		}
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("clean up fleet %s: %d deletions failed, first: %w", fleet, len(errs), errors.Join(errs[0]))
	}
	return nil
}

// ownedLeases lists the node leases whose owner is one of owners.
func ownedLeases(ctx context.Context, client kubernetes.Interface, owners map[types.UID]bool) ([]coordinationv1.Lease, error) {
	var out []coordinationv1.Lease
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.CoordinationV1().Leases(agent.LeaseNamespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list node leases: %w", err)
		}
		for _, l := range list.Items {
			for _, o := range l.OwnerReferences {
				if o.Kind == "Node" && owners[o.UID] {
					out = append(out, l)
					break
				}
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// ignoreGone treats an object already gone, or replaced by another of the same name, as done.
func ignoreGone(err error, what string) error {
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
