package transport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/internal/protofield"
)

// TestLeaseEncodingIsClientGos: encodeLease writes what client-go's protobuf serializer writes, for
// Leases whose bytes' length takes one, two and three bytes to say.
func TestLeaseEncodingIsClientGos(t *testing.T) {
	now := metav1.NewMicroTime(time.Date(2026, 12, 4, 18, 0, 0, 123456000, time.UTC))
	for _, size := range []int{0, 200, 20000} {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007", Namespace: "kube-node-lease", ResourceVersion: "41",
				Annotations: map[string]string{"fakelet.dev/pad": strings.Repeat("x", size)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fakelet-00007"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}
		got, err := encodeLease(lease)
		if err != nil {
			t.Fatal(err)
		}
		if want := encode(t, Protobuf, coordinationv1.SchemeGroupVersion, lease); !bytes.Equal(got, want) {
			t.Errorf("a Lease of %d bytes encoded as\n%q\nwant\n%q", lease.Size(), got, want)
		}
	}
}

// TestRawOfReadsTheObjectOfItsTypeOnly: the Lease's bytes are found in place in a Lease's body, and
// not in a Node's, nor in bytes that are no envelope.
func TestRawOfReadsTheObjectOfItsTypeOnly(t *testing.T) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007", Namespace: "kube-node-lease"}}
	body := encode(t, Protobuf, coordinationv1.SchemeGroupVersion, lease)
	want, err := lease.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if raw, ok := rawOf(body, leaseTypeMeta); !ok || !bytes.Equal(raw, want) {
		t.Errorf("a Lease's body gave %q, %v; want its bytes", raw, ok)
	}
	node := encode(t, Protobuf, corev1.SchemeGroupVersion, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007"}})
	if _, ok := rawOf(node, leaseTypeMeta); ok {
		t.Error("a Node's body was taken for a Lease's")
	}
	if _, ok := rawOf(append(bytes.Clone(protofield.Magic), 0x0a, 0xff), leaseTypeMeta); ok {
		t.Error("bytes that are no envelope were taken for a Lease's")
	}
}
