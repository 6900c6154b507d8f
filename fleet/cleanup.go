package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
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

// Cleanup deletes the pods the fleet created, its Nodes (those with its names and its fleet label) and
// the Leases those Nodes own. Each delete is conditional on the UID fakelet saw, so an object someone
// else created in the meantime under the same name is never deleted.
func (f *Fleet) Cleanup(ctx context.Context) error {
	var podErr error
	if f.pods != nil {
		f.pods.mu.Lock()
		created := maps.Clone(f.pods.created)
		f.pods.mu.Unlock()
		_, podErr = deleteCreatedPods(ctx, f.admin, created)
	}
	_, err := deleteFleet(ctx, f.admin, f.cfg.Fleet, f.holds, false)
	return errors.Join(podErr, err)
}

// Deleted is what DeleteFleet deleted, by name. A Node, Lease or pod found gone, or replaced by
// another of the same name, is not in it.
type Deleted struct {
	Nodes, Leases, Pods []string
}

// DeleteFleet deletes the Nodes labelled fakelet.dev/fleet=fleet whose names mine accepts (nil: all),
// the Leases in kube-node-lease that those Nodes own, and the pods in PodNamespace labelled with the
// fleet and bound to those Nodes. Nothing else is touched: a Node without the label, or with another
// fleet's, is not even considered, whatever its name.
func DeleteFleet(ctx context.Context, client kubernetes.Interface, fleet string, mine func(name string) bool) (Deleted, error) {
	return deleteFleet(ctx, client, fleet, mine, true)
}

func deleteFleet(ctx context.Context, client kubernetes.Interface, fleet string, mine func(name string) bool, withPods bool) (Deleted, error) {
	var deleted Deleted
	selector := labels.SelectorFromSet(labels.Set{agent.FleetLabel: fleet}).String()
	var nodes []corev1.Node
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 500}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return deleted, fmt.Errorf("list fleet %s's nodes: %w", fleet, err)
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
		return deleted, err
	}
	var pods []corev1.Pod
	if withPods {
		names := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			names[n.Name] = true
		}
		if pods, err = fleetPods(ctx, client, fleet, names); err != nil {
			return deleted, err
		}
	}

	// Each deletion returns the name it deleted, or "" if the object was already gone.
	work := make(chan func() (string, error))
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range cleanupWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for del := range work {
				name, err := del()
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case strings.HasPrefix(name, "lease/"):
					deleted.Leases = append(deleted.Leases, strings.TrimPrefix(name, "lease/"))
				case strings.HasPrefix(name, "pod/"):
					deleted.Pods = append(deleted.Pods, strings.TrimPrefix(name, "pod/"))
				case name != "":
					deleted.Nodes = append(deleted.Nodes, name)
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range pods {
		work <- func() (string, error) {
			ok, err := deletePod(ctx, client, p.Name, p.UID)
			if !ok {
				return "", err
			}
			return "pod/" + p.Name, nil
		}
	}
	for _, l := range leases {
		work <- func() (string, error) {
			err := client.CoordinationV1().Leases(agent.LeaseNamespace).Delete(ctx, l.Name, uidPrecondition(l.UID))
			return deletedName(err, "lease/"+l.Name, "delete lease "+l.Name)
		}
	}
	for _, n := range nodes {
		work <- func() (string, error) {
			err := client.CoreV1().Nodes().Delete(ctx, n.Name, uidPrecondition(n.UID))
			return deletedName(err, n.Name, "delete node "+n.Name)
		}
	}
	close(work)
	wg.Wait()
	sort.Strings(deleted.Nodes)
	sort.Strings(deleted.Leases)
	sort.Strings(deleted.Pods)
	if len(errs) > 0 {
		return deleted, fmt.Errorf("clean up fleet %s: %d deletions failed, first: %w", fleet, len(errs), errors.Join(errs[0]))
	}
	return deleted, nil
}

// deletedName is name if a delete succeeded, "" if the object was gone or replaced, or the error.
func deletedName(err error, name, what string) (string, error) {
	if err == nil {
		return name, nil
	}
	return "", ignoreGone(err, what)
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
