package bench

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/fleetname"
)

func fleetNode(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleetname.Label: "fakelet"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

func nodeLease(name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)},
	}
}

func TestHandedOverWhenThePeerHoldsEveryLeaseAndEveryNodeIsReady(t *testing.T) {
	const kwok = "host_3f2a"
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		want    bool
	}{
		{"fakelet still holds a Lease", []runtime.Object{
			fleetNode("n1", corev1.ConditionTrue), fleetNode("n2", corev1.ConditionTrue),
			nodeLease("n1", kwok), nodeLease("n2", "n2"),
		}, false},
		{"a Node is not Ready", []runtime.Object{
			fleetNode("n1", corev1.ConditionTrue), fleetNode("n2", corev1.ConditionUnknown),
			nodeLease("n1", kwok), nodeLease("n2", kwok),
		}, false},
		{"a Lease is missing; another node's does not count", []runtime.Object{
			fleetNode("n1", corev1.ConditionTrue), fleetNode("n2", corev1.ConditionTrue),
			nodeLease("n1", kwok), nodeLease("other", kwok),
		}, false},
		{"a Lease without a holder", []runtime.Object{
			fleetNode("n1", corev1.ConditionTrue), fleetNode("n2", corev1.ConditionTrue),
			nodeLease("n1", kwok), nodeLease("n2", ""),
		}, false},
		{"handed over", []runtime.Object{
			fleetNode("n1", corev1.ConditionTrue), fleetNode("n2", corev1.ConditionTrue),
			nodeLease("n1", kwok), nodeLease("n2", kwok),
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := handedOver(context.Background(), fake.NewClientset(tc.objects...), 2)
			if err != nil || got != tc.want {
				t.Fatalf("handedOver = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
