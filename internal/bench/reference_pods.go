package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/pause"
)

// The pods window's pods are a user's, placed by the scheduler: each kind of kubelet learns of its
// own from its pod watch once they are bound, as it does a Deployment's, and runs them. The
// reference itself shows no pod to any node.

// runPods creates perNode pods for each of nodes, with no node named: the scheduler spreads them
// evenly over nodes (referencePod). It returns the pods each node was given, which the comparison
// counts per pod, deletes them (as a user does, with the pods' grace period, which each kubelet
// confirms) half of window after it began, and force-deletes any left at the end of the window.
func runPods(ctx context.Context, admin kubernetes.Interface, nodes []string, perNode int, window time.Duration, log io.Writer) (map[string]int, error) {
	start := time.Now()
	pods := admin.CoreV1().Pods(fleetname.PodNamespace)
	created := map[string]*corev1.Pod{}
	for i := range perNode * len(nodes) {
		pod, err := pods.Create(ctx, referencePod(i, nodes), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create reference pod %d: %w", i, err)
		}
		created[pod.Name] = pod
	}
	placed, err := waitPlaced(ctx, admin, created, start.Add(window/2))
	if err != nil {
		return nil, err
	}
	perNodePlaced := map[string]int{}
	for _, node := range placed {
		perNodePlaced[node]++
	}
	if unplaced := len(created) - len(placed); unplaced > 0 {
		fmt.Fprintf(log, "   %d of %d pods were not scheduled before their deletion; placed per node: %v\n", unplaced, len(created), perNodePlaced)
	}
	if err := pause.For(ctx, time.Until(start.Add(window/2))); err != nil {
		return nil, err
	}
	for name, pod := range created {
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}
		if err := pods.Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete pod %s: %w", name, err)
		}
	}
	if err := pause.For(ctx, time.Until(start.Add(window))); err != nil {
		return nil, err
	}
	for name, pod := range created {
		opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}}
		if err := pods.Delete(ctx, name, opts); err == nil {
			fmt.Fprintf(log, "   pod %s was still there at the end of the pods window: deleted at once\n", name)
		} else if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("delete pod %s: %w", name, err)
		}
	}
	return perNodePlaced, fleet.DeletePodNamespace(ctx, admin, referenceFleet)
}

// waitPlaced watches the reference's pods until every one of created is bound to a node, or until
// deadline, and returns the node of each bound one by name.
func waitPlaced(ctx context.Context, admin kubernetes.Interface, created map[string]*corev1.Pod, deadline time.Time) (map[string]string, error) {
	placed := map[string]string{}
	see := func(pod *corev1.Pod) bool {
		if c := created[pod.Name]; c != nil && c.UID == pod.UID && pod.Spec.NodeName != "" {
			placed[pod.Name] = pod.Spec.NodeName
		}
		return len(placed) == len(created)
	}
	if err := watchPods(ctx, admin, fleetname.PodNamespace, referenceLabel, deadline, see); err != nil {
		return nil, fmt.Errorf("watch the reference's pods until the scheduler placed them: %w", err)
	}
	return placed, nil
}

// referencePod is pod i of the pods window: the fleet's kind of pod (fleet/pods.go), one pause
// container and the service account token volume the ServiceAccount admission plugin adds, as to a
// Deployment's pods, so that both kinds of kubelet watch kube-root-ca.crt and request the pod's
// token. It names no node: its required node affinity keeps it on the reference's nodes, and a
// topology spread constraint over hostnames that the scheduler may not break (maxSkew 1,
// DoNotSchedule) gives every node the same number of the reference's pods once all are placed.
func referencePod(i int, nodes []string) *corev1.Pod {
	labels := map[string]string{referenceLabel: "true"}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("ref-%d", i),
			Namespace: fleetname.PodNamespace,
			Labels:    labels,
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pause", Image: fleet.PodImage}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(nodes),
					}},
				}}},
			}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
			}},
		},
	}
}
