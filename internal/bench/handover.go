package bench

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/fleetname"
)

// handedOver reports whether a peer has taken n fleet Nodes over: each of their Leases held by
// someone other than the node itself (fakelet's agents hold their Lease as the node's name, as the
// kubelet does), and each Node Ready. Lists are served from the apiserver's cache.
func handedOver(ctx context.Context, cs kubernetes.Interface, n int) (bool, error) {
	fleetNodes := metav1.ListOptions{LabelSelector: fleetname.Label, ResourceVersion: "0"}
	nodes, err := cs.CoreV1().Nodes().List(ctx, fleetNodes)
	if err != nil {
		return false, fmt.Errorf("list the fleet's Nodes: %w", err)
	}
	mine := make(map[string]bool, len(nodes.Items))
	ready := 0
	for i := range nodes.Items {
		node := &nodes.Items[i]
		mine[node.Name] = true
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	leases, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return false, fmt.Errorf("list the node Leases: %w", err)
	}
	taken := 0
	for _, l := range leases.Items {
		if h := l.Spec.HolderIdentity; mine[l.Name] && h != nil && *h != "" && *h != l.Name {
			taken++
		}
	}
	return ready >= n && taken >= n, nil
}
