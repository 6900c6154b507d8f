package measure

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
)

// countingSource is a component whose one counter counts its scrapes.
type countingSource struct{ n atomic.Int64 }

func (c *countingSource) Component() string { return "kube-apiserver" }
func (c *countingSource) Scrape(context.Context) (map[string]*scrape.Family, error) {
	v := float64(c.n.Add(1))
	return map[string]*scrape.Family{"process_cpu_seconds_total": {Type: scrape.Counter, Series: map[string]*scrape.Series{"": {Value: v}}}}, nil
}

func TestSessionScrapesAtStartBoundariesAndStop(t *testing.T) {
	src := &countingSource{}
	s := New(Options{Sources: []scrape.Source{src}, ScrapeInterval: time.Hour})
	if err := s.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	s.PhaseBegan("steady", t1)
	s.Applied(reaction.Action{Phase: "steady", Group: "g", Op: "stop", Node: "n0", At: t1})
	t2 := t1.Add(time.Millisecond)
	s.PhaseBegan("outage", t2)
	s.Stop()
	s.Stop() // once is enough; twice is harmless
	rec := s.Record("p", record.Parameters{}, record.Versions{}, record.Target{})
	// At the start, at the two boundaries and at the stop; the hour-long interval never came.
	if got := src.n.Load(); got != 4 {
		t.Errorf("%d scrapes of the control plane, want 4", got)
	}
	if n := len(s.scraper.Snapshots()); n != 8 { // each with the fleet's own
		t.Errorf("%d snapshots, want 8", n)
	}
	if len(rec.Phases) != 2 || !rec.Phases[0].End.Equal(t2) || !rec.Phases[1].End.Equal(rec.End) {
		t.Errorf("phases %+v: want steady to end when outage began, and outage at the end", rec.Phases)
	}
	if len(s.Actions()) != 1 || rec.Profile != "p" || rec.Start.IsZero() || rec.End.Before(rec.Start) {
		t.Errorf("record %+v", rec)
	}
}

func TestOnReactionReportsTheFirstOfEachEventAfterTheNodesLatestAction(t *testing.T) {
	type got struct {
		event, group string
		fromAction   time.Duration
		fromRenewal  time.Duration
	}
	var calls []got
	s := New(Options{OnReaction: func(event, group string, fromAction, fromRenewal time.Duration) {
		calls = append(calls, got{event, group, fromAction, fromRenewal})
	}})
	ready := testNode("n0", corev1.ConditionTrue)
	s.recorder.ObserveNode(nil, ready) // before any action: not a reaction
	at := time.Now()
	s.Applied(reaction.Action{Phase: "outage", Group: "victims", Op: "stop", Node: "n0", At: at, LastRenewal: at.Add(-2 * time.Second)})
	unknown := testNode("n0", corev1.ConditionUnknown)
	s.recorder.ObserveNode(ready, unknown)
	s.recorder.ObserveNode(unknown, ready)
	s.recorder.ObserveNode(ready, unknown) // a second ready_unknown after the same action: not reported
	if len(calls) != 2 || calls[0].event != reaction.ReadyUnknown || calls[1].event != reaction.ReadyTrue || calls[0].group != "victims" {
		t.Fatalf("reactions %+v, want ready_unknown then ready_true of victims", calls)
	}
	if d := calls[0].fromRenewal - calls[0].fromAction; d != 2*time.Second {
		t.Errorf("from last renewal %v, from action %v: want 2 s apart", calls[0].fromRenewal, calls[0].fromAction)
	}
}

func testNode(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
}

// A renewal in flight when a node stopped is cancelled on the agent's side; when the Lease watch shows
// the server committed it, the action counts from it, as the node lifecycle controller does.
func TestACommittedRenewalInFlightAtAStopIsTheLastRenewal(t *testing.T) {
	var fromAction, fromRenewal time.Duration
	s := New(Options{OnReaction: func(_, _ string, a, r time.Duration) { fromAction, fromRenewal = a, r }})
	at := time.Now()
	answered, inFlight := at.Add(-10300*time.Millisecond), at.Add(-100*time.Millisecond)
	s.Applied(reaction.Action{Phase: "outage", Group: "victims", Op: "stop", Node: "n0", At: at, LastRenewal: answered})
	s.Applied(reaction.Action{Phase: "outage", Group: "victims", Op: "notReady", Node: "n1", At: at, LastRenewal: answered})
	s.renewed("n0", answered.Add(-5*time.Millisecond)) // the answered one, seen late: no change
	s.renewed("n0", inFlight)
	s.renewed("n0", at.Add(time.Millisecond)) // sent after the stop: not the stopped kubelet's
	s.renewed("n1", inFlight)                 // n1 keeps renewing: notReady does not silence it
	s.renewed("n2", inFlight)                 // no action
	actions := s.Actions()
	if got := actions[0].LastRenewal; !got.Equal(inFlight) {
		t.Errorf("stopped node's last renewal %v, want the committed one in flight at the stop, %v", got, inFlight)
	}
	if got := actions[1].LastRenewal; !got.Equal(answered) {
		t.Errorf("notReady node's last renewal %v, want the agent's %v", got, answered)
	}
	s.recorder.ObserveNode(nil, testNode("n0", corev1.ConditionUnknown))
	if d := fromRenewal - fromAction; d != 100*time.Millisecond {
		t.Errorf("live reaction: from last renewal %v, from action %v: want 100 ms apart", fromRenewal, fromAction)
	}
}

// A renewal in flight at a stop may be committed, and seen by the Lease watch, before the stop is
// recorded: the action still counts from it.
func TestARenewalSeenBeforeTheStopIsRecordedIsTheLastRenewal(t *testing.T) {
	s := New(Options{})
	at := time.Now()
	answered, inFlight := at.Add(-10200*time.Millisecond), at.Add(-40*time.Millisecond)
	lease := func(renew time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n0", UID: "u0"},
			Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renew}}}
	}
	s.recorder.ObserveLease(nil, lease(answered))
	s.recorder.ObserveLease(lease(answered), lease(inFlight))
	s.Applied(reaction.Action{Phase: "outage", Group: "victims", Op: "stop", Node: "n0", At: at, LastRenewal: answered})
	if got := s.Actions()[0].LastRenewal; !got.Equal(inFlight) {
		t.Errorf("stopped node's last renewal %v, want the committed one the watch saw before the stop was recorded, %v", got, inFlight)
	}
}

// The session passes its transitions, actions and phases to its false alarm detector, and its
// record holds what it counted: an alarm on a node no op touched, none on the stopped one.
func TestRecordCountsFalseAlarms(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	clk := testingclock.NewFakeClock(now)
	s := New(Options{Clock: clk})
	s.PhaseBegan("steady", t0)
	for _, n := range []string{"n0", "n1"} {
		s.recorder.ObserveNode(nil, testNode(n, corev1.ConditionTrue))
	}
	now = t0.Add(time.Minute)
	clk.SetTime(now)
	s.Applied(reaction.Action{Phase: "steady", Group: "victims", Op: "stop", Node: "n1", At: now})
	now = t0.Add(2 * time.Minute)
	clk.SetTime(now)
	for _, n := range []string{"n0", "n1"} {
		s.recorder.ObserveNode(testNode(n, corev1.ConditionTrue), testNode(n, corev1.ConditionUnknown))
	}
	rec := s.Record("p", record.Parameters{}, record.Versions{}, record.Target{})
	if fa := rec.FalseAlarms; len(fa) != 1 || fa[0].Phase != "steady" || fa[0].Event != reaction.ReadyUnknown ||
		fa[0].Count != 1 || fa[0].None != 1 || len(fa[0].Nodes) != 1 || fa[0].Nodes[0] != "n0" {
		t.Errorf("false alarms %+v: want n0's ready_unknown in steady, cause none", fa)
	}
}

// A run without phases counts its false alarms in "run", the one phase its report has.
func TestFalseAlarmsOfARunWithoutPhasesAreInRun(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	clk := testingclock.NewFakeClock(now)
	s := New(Options{Clock: clk})
	s.recorder.ObserveNode(nil, testNode("n0", corev1.ConditionTrue))
	now = t0.Add(time.Minute)
	clk.SetTime(now)
	s.recorder.ObserveNode(testNode("n0", corev1.ConditionTrue), testNode("n0", corev1.ConditionFalse))
	rec := s.Record("", record.Parameters{}, record.Versions{}, record.Target{})
	if fa := rec.FalseAlarms; len(fa) != 1 || fa[0].Phase != "run" || fa[0].Event != reaction.ReadyFalse {
		t.Errorf("false alarms %+v: want a ready_false in run", fa)
	}
}
