package agent

import (
	"context"
	"strings"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Helpers for driving the upstream lease controller against a fake clientset.

var upstreamMu sync.Mutex

func seed(t *testing.T, c *fake.Clientset, node *corev1.Node, lease *coordinationv1.Lease) {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Create(context.Background(), node.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if lease != nil {
		if _, err := c.CoordinationV1().Leases(LeaseNamespace).Create(context.Background(), lease.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.ClearActions()
}

// recordCalls records every request to c in calls, failing the first n that match verb and resource
// with err.
func recordCalls(c *fake.Clientset, calls *[]call, verb, resource string, n int, err error) {
	c.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		upstreamMu.Lock()
		defer upstreamMu.Unlock()
		res := action.GetResource().Resource
		if sub := action.GetSubresource(); sub != "" {
			res += "/" + sub
		}
		*calls = append(*calls, call{verb: action.GetVerb(), res: res})
		if n > 0 && action.GetVerb() == verb && res == resource {
			n--
			return true, nil, err
		}
		return false, nil, nil
	})
}

func snapshot(calls *[]call) []call {
	upstreamMu.Lock()
	defer upstreamMu.Unlock()
	return append([]call(nil), *calls...)
}

func countCalls(summary string) int {
	if summary == "" {
		return 0
	}
	return strings.Count(summary, ";") + 1
}

// nodeOwner is the kubelet's SetNodeOwnerFunc (pkg/kubelet/util/nodelease.go), which the main
// module cannot import.
func nodeOwner(c *fake.Clientset, name string) func(*coordinationv1.Lease) error {
	return func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) == 0 {
			node, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}
		}
		return nil
	}
}
