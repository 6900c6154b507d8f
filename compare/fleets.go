package compare

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
)

// compareFleet names each mode's fleet, and its nodes' prefix: two modes on one cluster never share
// a node name, so the second fleet's checks never see the first's nodes.
func compareFleet(mode heartbeat.Mode) string { return "compare-" + string(mode) }

// NoFleetsLeft refuses a cluster that already has Nodes of the compare fleets (a compare killed
// before its cleanup): they would be adopted and measured as part of a mode.
func NoFleetsLeft(ctx context.Context, c kubernetes.Interface, modes []heartbeat.Mode) error {
	for _, mode := range modes {
		name := compareFleet(mode)
		n, err := fleetNodes(ctx, c, name)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("the cluster already has %d Node(s) of fleet %s, left by an earlier fakelet compare: "+
				"delete them first (fakelet cleanup --fleet %s, with the same --kubeconfig/--context)", n, name, name)
		}
	}
	return nil
}

func fleetNodes(ctx context.Context, c kubernetes.Interface, name string) (int, error) {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{fleetname.Label: name}).String()})
	if err != nil {
		return 0, fmt.Errorf("list the Nodes of fleet %s: %w", name, err)
	}
	return len(list.Items), nil
}

// fleetGoneTimeout bounds the wait for a deleted fleet's Nodes to disappear from the cluster.
const fleetGoneTimeout = time.Minute

// waitFleetGone waits until the cluster has no Node of fleet name: its deletions are done before
// anything else is measured.
func waitFleetGone(ctx context.Context, c kubernetes.Interface, name string) error {
	var left int
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, fleetGoneTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		left, err = fleetNodes(ctx, c, name)
		return err == nil && left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d Node(s) of fleet %s still in the cluster %v after its deletion: %w", left, name, fleetGoneTimeout, err)
	}
	return nil
}
