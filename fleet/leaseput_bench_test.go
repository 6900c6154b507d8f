package fleet

import (
	"context"
	"net/http"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
)

// BenchmarkLeasePut compares one lease renewal's client side, request and answer over HTTP/2 and
// TLS, through client-go's generated client and through the fleet's leaseWriter. The server's cost is
// in the numbers too, equal for both.
func BenchmarkLeasePut(b *testing.B) {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007", Namespace: agent.LeaseNamespace, ResourceVersion: "41", UID: "lease-uid"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fakelet-00007"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NowMicro())},
	}
	answer := encode(b, protobuf, coordinationv1.SchemeGroupVersion, lease)
	lean := leaseClients(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", protobuf)
		_, _ = w.Write(answer)
	}))
	for name, leases := range map[string]interface {
		Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
	}{
		"client-go": lean.CoordinationV1Interface.Leases(agent.LeaseNamespace),
		"lean":      lean.Leases(agent.LeaseNamespace),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := leases.Update(context.Background(), lease, metav1.UpdateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
