package reaction

import (
	"fmt"
	"runtime"
	"testing"

	"fakelet.dev/fakelet/internal/heapsize"
)

// BenchmarkTrackerHeapPerNode is what the tracker keeps of a node that registered and turned Ready,
// as every node of a run does: its conditions and the not-ready taint it carried a while. The
// tracker is in every run, so this is a part of the fleet's RSS per node. Run it with -benchtime 1x.
func BenchmarkTrackerHeapPerNode(b *testing.B) {
	const nodes = 2000
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("fakelet-%05d", i)
	}
	var perNode float64
	for b.Loop() {
		before := heapsize.Live()
		tr := NewTracker()
		for _, n := range names {
			for _, c := range []string{"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"} {
				tr.Observe(cond(0, n, c, "False"))
			}
			tr.Observe(cond(0, n, "Ready", "True"))
			tr.Observe(taint(0, n, "node.kubernetes.io/not-ready", "NoSchedule", true))
			tr.Observe(taint(1, n, "node.kubernetes.io/not-ready", "NoSchedule", false))
		}
		perNode = float64(heapsize.Live()-before) / nodes
		runtime.KeepAlive(tr)
	}
	b.ReportMetric(perNode, "heap-B/node")
}
