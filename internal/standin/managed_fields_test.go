package standin

import (
	"bytes"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestARenewalSharesItsLeasesFieldSetOnlyWhenItIsTheSame: a Lease's field set is its predecessor's
// when, and only when, leaseFields makes the same bytes of both.
func TestARenewalSharesItsLeasesFieldSetOnlyWhenItIsTheSame(t *testing.T) {
	base := func() *coordinationv1.Lease {
		l := testLease("n1")
		l.Annotations = map[string]string{"fakelet.dev/run": "r1"}
		l.OwnerReferences = []metav1.OwnerReference{{Kind: "Node", Name: "n1", UID: "u1"}}
		return l
	}
	variants := map[string]func(*coordinationv1.Lease){
		"renewed":               func(l *coordinationv1.Lease) { l.Spec.RenewTime = &metav1.MicroTime{} },
		"an annotation's value": func(l *coordinationv1.Lease) { l.Annotations["fakelet.dev/run"] = "r2" },
		"another annotation":    func(l *coordinationv1.Lease) { l.Annotations["x"] = "" },
		"an annotation renamed": func(l *coordinationv1.Lease) { l.Annotations = map[string]string{"y": "r1"} },
		"no annotations":        func(l *coordinationv1.Lease) { l.Annotations = nil },
		"a label":               func(l *coordinationv1.Lease) { l.Labels = map[string]string{"a": "b"} },
		"an empty label map":    func(l *coordinationv1.Lease) { l.Labels = map[string]string{} },
		"another owner":         func(l *coordinationv1.Lease) { l.OwnerReferences[0].UID = "u2" },
		"an owner's name":       func(l *coordinationv1.Lease) { l.OwnerReferences[0].Name = "n2" },
		"a second owner": func(l *coordinationv1.Lease) {
			l.OwnerReferences = append(l.OwnerReferences, metav1.OwnerReference{UID: "u3"})
		},
		"no owners": func(l *coordinationv1.Lease) { l.OwnerReferences = nil },
		"a holder":  func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = nil },
	}
	s := New(Options{})
	leases := resourceNamed(t, "leases")
	req := s.request("PUT", leasesPath+"/n1", nil)
	for name, change := range variants {
		was := base()
		was.ManagedFields = managedFields(req, leases, was, metav1.ManagedFieldsOperationUpdate, metav1.Time{}, nil)
		old, err := newEntry(leases, was, 1)
		if err != nil {
			t.Fatal(err)
		}
		now := base()
		change(now)
		got := managedFields(req, leases, now, metav1.ManagedFieldsOperationUpdate, metav1.Time{}, old)[0].FieldsV1
		if want := leaseFields(now); !bytes.Equal(got.Raw, want) {
			t.Errorf("%s: the field set is %s, want %s", name, got.Raw, want)
		}
		if shared := got == was.ManagedFields[0].FieldsV1; shared != bytes.Equal(leaseFields(was), leaseFields(now)) {
			t.Errorf("%s: shared %v, though the field sets are %s and %s", name, shared, leaseFields(was), leaseFields(now))
		}
	}
}
