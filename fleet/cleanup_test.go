package fleet

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// TestDeleteFleetReportsWhatItDeletedAndNothingElse: of Nodes sharing a name prefix, only those
// labelled with the fleet are deleted, with the Leases they own; the report names exactly those.
func TestDeleteFleetReportsWhatItDeletedAndNothingElse(t *testing.T) {
	node := func(name, uid string, labels map[string]string) runtime.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Labels: labels}}
	}
	lease := func(name, ownerUID string) runtime.Object {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agent.LeaseNamespace}}
		if ownerUID != "" {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID(ownerUID)}}
		}
		return l
	}
	ours := map[string]string{fleetname.Label: "blue"}
	client := fake.NewClientset(
		node("fakelet-00000", "u0", ours), lease("fakelet-00000", "u0"),
		node("fakelet-00001", "u1", ours),                              // its lease not created yet
		node("fakelet-00002", "u2", nil), lease("fakelet-00002", "u2"), // same prefix, no label
		node("fakelet-00003", "u3", map[string]string{fleetname.Label: "green"}), lease("fakelet-00003", "u3"),
		lease("fakelet-00004", ""), // a lease with our prefix and no owner
	)
	deleted, err := DeleteFleet(context.Background(), client, CleanupOptions{Fleet: "blue"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(deleted.Nodes, ","); got != "fakelet-00000,fakelet-00001" {
		t.Errorf("deleted nodes %s, want fakelet-00000,fakelet-00001", got)
	}
	if got := strings.Join(deleted.Leases, ","); got != "fakelet-00000" {
		t.Errorf("deleted leases %s, want fakelet-00000", got)
	}
	nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	leases, _ := client.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	var left []string
	for _, n := range nodes.Items {
		left = append(left, "node/"+n.Name)
	}
	for _, l := range leases.Items {
		left = append(left, "lease/"+l.Name)
	}
	want := "node/fakelet-00002,node/fakelet-00003,lease/fakelet-00002,lease/fakelet-00003,lease/fakelet-00004"
	if got := strings.Join(left, ","); got != want {
		t.Errorf("left %s, want %s", got, want)
	}
}
