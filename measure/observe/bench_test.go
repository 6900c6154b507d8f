package observe

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/internal/heapsize"
)

// BenchmarkObserveUnchangedNode is the handler's cost for what most watch events are at scale: a
// Node whose conditions and taints did not change (a status patch of heartbeat times).
func BenchmarkObserveUnchangedNode(b *testing.B) {
	r := NewRecorder(nil)
	n := node(corev1.ConditionTrue, "KubeletReady")
	b.ReportAllocs()
	for b.Loop() {
		r.ObserveNode(n, n)
	}
}

// TestRecorderAt10kNodes: registering 10,000 nodes and stopping and starting a tenth of them costs a
// few megabytes, not copies of Nodes.
func TestRecorderAt10kNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 10,000 nodes")
	}
	before := heapsize.Live()
	r := NewRecorder(nil)
	for i := range 10000 {
		n := node(corev1.ConditionFalse, "KubeletNotReady", notReadyNS)
		n.Name = fmt.Sprintf("fakelet-%05d", i)
		r.ObserveNode(nil, n)
		ready := node(corev1.ConditionTrue, "KubeletReady")
		ready.Name = n.Name
		r.ObserveNode(n, ready)
		if i%10 == 0 {
			unknown := node(corev1.ConditionUnknown, "NodeStatusUnknown", unreachableNS, unreachableNE)
			unknown.Name = n.Name
			r.ObserveNode(ready, unknown)
			r.ObserveNode(unknown, ready)
		}
	}
	held := int64(heapsize.Live()) - int64(before)
	t.Logf("%d transitions of 10,000 nodes hold %.1f MiB", r.TransitionCount(), float64(held)/(1<<20))
	if held > 16<<20 {
		t.Errorf("the record of 10,000 nodes holds %.1f MiB, want under 16 MiB", float64(held)/(1<<20))
	}
	runtime.KeepAlive(r)
}
