package measure

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
)

// TestSixHourFlapKeepsTheHeapFlat: 1000 nodes stopped and started every minute for six hours on a
// fake clock, each answered by the node lifecycle controller's Unknown and unreachable taints and by
// Ready again, fed to a session as its watch and profile runner would (720,000 actions, 2.2 million
// transitions). The heap after the sixth hour is within a small margin of the heap after the first:
// the session keeps counts, each node's state and bounded samples, not every action and transition.
// Its report still counts every action and transition, and says its latencies are a sample.
func TestSixHourFlapKeepsTheHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("six simulated hours of 1000 flapping nodes: not under -short")
	}
	const (
		nodes  = 1000
		period = 60 // seconds between a node's stops
	)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	clk := testingclock.NewFakeClock(now)
	s := New(Options{Clock: clk})
	ready := make([]*corev1.Node, nodes)
	unknown := make([]*corev1.Node, nodes)
	for i := range nodes {
		ready[i] = testNode(fmt.Sprintf("flap-%05d", i), corev1.ConditionTrue)
		unknown[i] = testNode(ready[i].Name, corev1.ConditionUnknown)
		unknown[i].Spec.Taints = []corev1.Taint{
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute},
		}
		s.recorder.ObserveNode(nil, ready[i])
	}
	s.PhaseBegan("flap", t0)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var atHour [7]uint64
	actions := 0
	for sec := 0; sec < 6*3600; sec++ {
		now = t0.Add(time.Duration(sec) * time.Second)
		clk.SetTime(now)
		if sec%3600 == 0 {
			atHour[sec/3600] = heap()
		}
		for i := sec % period; i < nodes; i += period {
			s.Applied(reaction.Action{Phase: "flap", Group: "all", Op: "stop", Node: ready[i].Name, At: now, LastRenewal: now.Add(-5 * time.Second)})
			actions++
		}
		for i := (sec - 20 + period) % period; i < nodes; i += period { // 20 s after the stop
			if sec >= 20 {
				s.recorder.ObserveNode(ready[i], unknown[i])
			}
		}
		for i := (sec - 30 + period) % period; i < nodes; i += period {
			if sec >= 30 {
				s.Applied(reaction.Action{Phase: "flap", Group: "all", Op: "start", Node: ready[i].Name, At: now})
				actions++
			}
		}
		for i := (sec - 31 + period) % period; i < nodes; i += period {
			if sec >= 31 {
				s.recorder.ObserveNode(unknown[i], ready[i])
			}
		}
	}
	end := heap()
	for h := 1; h <= 6; h++ {
		if h < 6 {
			t.Logf("heap after %d h: %.1f MiB", h, float64(atHour[h])/(1<<20))
		}
	}
	t.Logf("heap after 6 h: %.1f MiB (%d actions, %d transitions)", float64(end)/(1<<20), actions, s.recorder.TransitionCount())
	if margin := uint64(4 << 20); end > atHour[1]+margin {
		t.Errorf("the heap grew from %.1f MiB after 1 h to %.1f MiB after 6 h, more than %d MiB",
			float64(atHour[1])/(1<<20), float64(end)/(1<<20), margin>>20)
	}

	now = now.Add(time.Second)
	clk.SetTime(now)
	s.PhaseEnded(now)
	r := s.Record("flap", record.Parameters{}, record.Versions{}, record.Target{})
	if want := nodes + 6*nodes*period*3; r.Nodes.Transitions < want {
		t.Errorf("the report counts %d transitions, want at least %d", r.Nodes.Transitions, want)
	}
	total := 0
	for _, sum := range r.Reactions {
		if sum.Event == reaction.ReadyUnknown && sum.Op == "stop" {
			total = sum.Actions
			if sum.SamplesOf != sum.Reacted || len(sum.Samples) != reaction.MaxSamples || sum.FromLastRenewal == nil || sum.FromLastRenewal.Min != 25 {
				t.Errorf("stop -> Unknown: %d reacted, %d samples of %d, from last renewal %+v; want %d samples of every one, 25 s each",
					sum.Reacted, len(sum.Samples), sum.SamplesOf, sum.FromLastRenewal, reaction.MaxSamples)
			}
		}
	}
	if total == 0 || total > actions {
		t.Errorf("the report counts %d stops of %d actions", total, actions)
	}
}
