package fleet

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/fleettest"
)

// TestLongRunWithFlappingNodesStaysFlat runs a fleet for six simulated hours (two under -short) on
// the fake clock while nodes flap every minute: kubelets die and come back, networks partition and
// heal, latency comes and goes, nodes turn NotReady and Ready. Goroutines and the live heap, sampled
// once the fleet has warmed up, must not grow: anything an agent leaks per request, per restart or
// per fault would show here. Then a partition of every node must leave no goroutine behind.
func TestLongRunWithFlappingNodesStaysFlat(t *testing.T) {
	const (
		nodes = 100
		step  = time.Minute
		// Partitions begin and heal at the same rate, so the share of nodes cut off settles at a half,
		// within about 1/0.06 = 17 minutes; sampling starts once it has.
		warmedUp = 90 * time.Minute
		sample   = 30 * time.Minute
	)
	hours := time.Duration(6)
	if testing.Short() {
		hours = 2
	}
	// The simple fake clientset: the default one's field manager rebuilds a REST mapper on every
	// update, which would make hours of heartbeats take minutes.
	client := fake.NewSimpleClientset()
	fc := testingclock.NewFakeClock(t0)
	f, err := NewWithClients(fleettest.Resolve(t, Config{Nodes: nodes, RegisterQPS: 1000, Clock: fc, Template: agent.TemplateOptions{Images: 3}}),
		client, []agent.Clients{{Core: client.CoreV1(), Coordination: client.CoordinationV1()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tf := &testFleet{Fleet: f, client: client, clock: fc, cancel: cancel, done: make(chan error, 1)}
	go func() { tf.done <- f.Run(ctx) }()
	rng := rand.New(rand.NewPCG(1, 2))
	type point struct {
		at         time.Duration
		goroutines int
		heap       uint64
	}
	var points []point
	measure := func(at time.Duration) {
		tf.Scheduler().WaitIdle()
		tf.client.ClearActions() // the fake clientset keeps every request it saw
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		points = append(points, point{at, runtime.NumGoroutine(), ms.HeapAlloc})
	}
	var stopped []*agent.Agent
	for at := step; at <= hours*time.Hour; at += step {
		agents := tf.Agents()
		// Those stopped a minute ago come back, as restarted kubelets.
		for _, a := range stopped {
			a.Start(ctx) // as the fleet starts its agents: on the run's context
		}
		stopped = stopped[:0]
		for _, a := range agents {
			switch r := rng.IntN(100); {
			case r < 3:
				a.Stop()
				stopped = append(stopped, a)
			case r < 6:
				a.SetPartitioned(true)
			case r < 9:
				a.SetPartitioned(false)
			case r < 11:
				a.SetLatency(time.Duration(rng.IntN(3000)) * time.Millisecond)
			case r < 13:
				a.SetLatency(0)
			case r < 16:
				a.SetHealth(func(h *agent.Health) { h.NotReady = !h.NotReady })
			}
		}
		tf.advance(t, at)
		if at >= warmedUp && at%sample == 0 {
			measure(at)
		}
	}
	// Then every node is cut off for five minutes, as when the fleet's own network fails, and heals:
	// each hung request holds a goroutine while it hangs, but none may stay once they are answered.
	end := hours * time.Hour
	for _, a := range tf.Agents() {
		a.SetPartitioned(false)
		a.SetLatency(0)
	}
	for _, a := range stopped {
		a.Start(ctx)
	}
	tf.advance(t, end+10*time.Minute)
	settled := runtime.NumGoroutine()
	for _, a := range tf.Agents() {
		a.SetPartitioned(true)
	}
	tf.advance(t, end+15*time.Minute)
	partitioned := runtime.NumGoroutine()
	for _, a := range tf.Agents() {
		a.SetPartitioned(false)
	}
	tf.advance(t, end+45*time.Minute)
	tf.Scheduler().WaitIdle()
	healed := runtime.NumGoroutine()
	for i := 0; healed > settled+nodes/2 && i < 100; i++ {
		time.Sleep(10 * time.Millisecond) // idle workers exit just after they finish
		healed = runtime.NumGoroutine()
	}
	t.Logf("goroutines: %d settled, %d while all %d nodes are partitioned, %d after they heal", settled, partitioned, nodes, healed)
	if partitioned < settled+nodes {
		t.Errorf("only %d goroutines with every node's requests hanging (%d before): the partition did not hang them", partitioned, settled)
	}
	if healed > settled+nodes/2 {
		t.Errorf("%d goroutines 30 minutes after the partition healed, %d before it: goroutines piled up", healed, settled)
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}

	base := points[0]
	for _, p := range points {
		t.Logf("%v: %d goroutines, %.1f MiB live heap", p.at, p.goroutines, float64(p.heap)/(1<<20))
	}
	// Peaks differ from sample to sample (how many requests hang at that instant), so allow what a
	// few dozen parked requests cost, but nothing that grows with time.
	last := points[len(points)-1]
	if last.goroutines > base.goroutines+2*nodes/10 {
		t.Errorf("goroutines grew from %d at %v to %d at %v", base.goroutines, base.at, last.goroutines, last.at)
	}
	if last.heap > base.heap+base.heap/4+(1<<20) {
		t.Errorf("live heap grew from %d to %d bytes", base.heap, last.heap)
	}
	var renewals int64
	for _, a := range tf.Agents() {
		renewals += a.Stats().LeaseRenewals
	}
	// Each node renews about every 10.2 s when neither stopped nor partitioned; with partitions as
	// likely to begin as to heal, about half the nodes are cut off at any time.
	if min := int64(nodes) * int64(hours) * 3600 / 11 / 4; renewals < min {
		t.Errorf("%d lease renewals in %d simulated hours of %d nodes; want at least %d: the fleet did not keep running", renewals, hours, nodes, min)
	}
}
