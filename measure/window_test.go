package measure

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/measure/reaction"
)

// A phase's load is there once the phase ended, and its false alarms are its own, not the phase's
// before: a capacity step's hold is judged on what happened in it.
func TestPhaseLoadAndFalseAlarmsAreThePhases(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	clk := testingclock.NewFakeClock(now)
	s := New(Options{Clock: clk})
	s.PhaseBegan("settle 10", t0)
	for _, n := range []string{"n0", "n1"} {
		s.recorder.ObserveNode(nil, testNode(n, corev1.ConditionTrue))
	}
	now = t0.Add(time.Minute)
	clk.SetTime(now)
	s.recorder.ObserveNode(testNode("n1", corev1.ConditionTrue), testNode("n1", corev1.ConditionUnknown))
	s.PhaseBegan("10 nodes", t0.Add(2*time.Minute))
	if _, ok := s.PhaseLoad("10 nodes"); ok {
		t.Error("a load for a phase that has not ended")
	}
	now = t0.Add(3 * time.Minute)
	clk.SetTime(now)
	s.recorder.ObserveNode(testNode("n0", corev1.ConditionTrue), testNode("n0", corev1.ConditionFalse))
	s.PhaseEnded(t0.Add(4 * time.Minute))
	if ph, ok := s.PhaseLoad("10 nodes"); !ok || ph.Name != "10 nodes" || !ph.Start.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("load %+v %v: want the hold's", ph, ok)
	}
	if _, ok := s.PhaseLoad("20 nodes"); ok {
		t.Error("a load for a phase that never began")
	}
	fa := s.FalseAlarms("10 nodes")
	if len(fa) != 1 || fa[0].Event != reaction.ReadyFalse || fa[0].Nodes[0] != "n0" {
		t.Errorf("the hold's false alarms %+v: want n0's ready_false alone", fa)
	}
	if fa := s.FalseAlarms("settle 10"); len(fa) != 1 || fa[0].Nodes[0] != "n1" {
		t.Errorf("the settle's false alarms %+v: want n1's", fa)
	}
}
