package transport

import (
	"context"
	"net/http"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
)

// BenchmarkLeasePut compares one lease renewal's client side, request and answer over HTTP/2 and
// TLS, as a node (impersonated): through client-go's generated client, through the fleet's
// leaseWriter over net/http (legacy) and over the wire package; one at a time, and from many agents
// at once (parallel). The server's cost is in the numbers too, equal for all.
func BenchmarkLeasePut(b *testing.B) {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007", Namespace: agent.LeaseNamespace, ResourceVersion: "41", UID: "lease-uid"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fakelet-00007"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NowMicro())},
	}
	answer := encode(b, Protobuf, coordinationv1.SchemeGroupVersion, lease)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", Protobuf)
		_, _ = w.Write(answer)
	})
	legacy, wired := leaseClients(b, h, true), leaseClients(b, h, false)
	ctx, _ := agent.RequestContext(context.Background(), lease.Name)
	for _, c := range []struct {
		name   string
		leases coordinationv1client.LeaseInterface
	}{
		{"client-go", legacy.CoordinationV1Interface.Leases(agent.LeaseNamespace)},
		{"legacy", legacy.Leases(agent.LeaseNamespace)},
		{"wire", wired.Leases(agent.LeaseNamespace)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
