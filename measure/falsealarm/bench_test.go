package falsealarm_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/heapsize"
	"fakelet.dev/fakelet/measure/falsealarm"
)

// BenchmarkDetectorHeapPerNode is what the detector keeps per node once each node's ring of last
// requests is full, as it is for every node of a steady fleet: the detector is on every run's
// heartbeat path, so its per-node state is a part of the fleet's RSS per node. Run it with
// -benchtime 1x.
func BenchmarkDetectorHeapPerNode(b *testing.B) {
	const nodes = 2000
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("fakelet-%05d", i)
	}
	var perNode float64
	for b.Loop() {
		before := heapsize.Live()
		d := falsealarm.New(0)
		for beat := range 20 {
			at := t0.Add(time.Duration(beat) * 10 * time.Second)
			for _, n := range names {
				d.Request(agent.Request{Verb: "update", Resource: "leases", Node: n, Sent: at, Due: at, SendLag: time.Millisecond, Latency: 5 * time.Millisecond})
			}
		}
		perNode = float64(heapsize.Live()-before) / nodes
		runtime.KeepAlive(d)
	}
	b.ReportMetric(perNode, "heap-B/node")
}
