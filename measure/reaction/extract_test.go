package reaction

import (
	"reflect"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/observe"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func cond(s float64, node, typ, status string) observe.Transition {
	return observe.Transition{At: at(s), Node: node, Kind: observe.Condition, Type: typ, Status: status}
}

func taint(s float64, node, key, effect string, added bool) observe.Transition {
	k := observe.TaintRemoved
	if added {
		k = observe.TaintAdded
	}
	return observe.Transition{At: at(s), Node: node, Kind: k, Type: "node.kubernetes.io/" + key, Status: effect}
}

// A recorded stop-and-start of two victims among three nodes, with the node lifecycle controller's
// answers as the fleet's watch saw them.
func recordedRun() ([]Action, []Phase, []observe.Transition) {
	phases := []Phase{
		{Name: "steady", Start: at(0), End: at(10)},
		{Name: "outage", Start: at(10), End: at(70)},
		{Name: "recovery", Start: at(70), End: at(100)},
	}
	var ts []observe.Transition
	for _, n := range []string{"n0", "n1", "n2"} {
		ts = append(ts,
			cond(1, n, "Ready", "False"),
			taint(1, n, "not-ready", "NoSchedule", true),
			cond(2, n, "Ready", "True"),
			taint(2.5, n, "not-ready", "NoSchedule", false),
		)
	}
	ts = append(ts,
		// n0: silent from its last renewal at 8 s; Unknown at 31 s (grace 20 s + monitor period).
		cond(31, "n0", "Ready", "Unknown"),
		taint(31.1, "n0", "unreachable", "NoSchedule", true),
		taint(41, "n0", "unreachable", "NoExecute", true),
		// n1: Unknown later, and never tainted NoExecute within the outage.
		cond(33, "n1", "Ready", "Unknown"),
		taint(33.2, "n1", "unreachable", "NoSchedule", true),
		taint(75, "n1", "unreachable", "NoExecute", true), // after the outage: not a reaction to stop
		// recovery
		cond(73, "n0", "Ready", "True"),
		taint(74, "n0", "unreachable", "NoSchedule", false),
		taint(74, "n0", "unreachable", "NoExecute", false),
		cond(76, "n1", "Ready", "True"),
		taint(77, "n1", "unreachable", "NoSchedule", false),
	)
	actions := []Action{
		{Phase: "outage", Group: "victims", Op: "stop", Node: "n0", At: at(10), LastRenewal: at(8), LastStatusPatch: at(2)},
		{Phase: "outage", Group: "victims", Op: "stop", Node: "n1", At: at(10), LastRenewal: at(9)},
		{Phase: "recovery", Group: "victims", Op: "start", Node: "n0", At: at(70), LastRenewal: at(8)},
		{Phase: "recovery", Group: "victims", Op: "start", Node: "n1", At: at(70), LastRenewal: at(9)},
	}
	return actions, phases, ts
}

func TestExtract(t *testing.T) {
	actions, phases, ts := recordedRun()
	got := Extract(actions, phases, ts)
	want := []Result{
		{Action: actions[0], Reactions: []Reaction{
			{ReadyUnknown, at(31)},
			{"taint_unreachable_noschedule_added", at(31.1)},
			{"taint_unreachable_noexecute_added", at(41)},
		}},
		{Action: actions[1], Reactions: []Reaction{
			{ReadyUnknown, at(33)},
			{"taint_unreachable_noschedule_added", at(33.2)},
		}, Missing: []string{"taint_unreachable_noexecute_added"}},
		{Action: actions[2], Reactions: []Reaction{
			{ReadyTrue, at(73)},
			{"taint_unreachable_noschedule_removed", at(74)},
			{"taint_unreachable_noexecute_removed", at(74)},
		}},
		// n1 got its NoExecute taint after the start: removing it is expected only of what the node
		// had when the start took effect, and its addition is a reaction nonetheless.
		{Action: actions[3], Reactions: []Reaction{
			{"taint_unreachable_noexecute_added", at(75)},
			{ReadyTrue, at(76)},
			{"taint_unreachable_noschedule_removed", at(77)},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Extract:\n got %+v\nwant %+v", got, want)
	}
}

func TestExtractEndsAtTheNextActionOnTheNode(t *testing.T) {
	phases := []Phase{{Name: "flap", Start: at(0), End: at(100)}}
	actions := []Action{
		{Phase: "flap", Group: "g", Op: "stop", Node: "n0", At: at(10), LastRenewal: at(9)},
		{Phase: "flap", Group: "g", Op: "start", Node: "n0", At: at(20)},
	}
	ts := []observe.Transition{cond(0, "n0", "Ready", "True"), cond(25, "n0", "Ready", "Unknown")}
	got := Extract(actions, phases, ts)
	if len(got[0].Reactions) != 0 || !reflect.DeepEqual(got[0].Missing, []string{
		ReadyUnknown, "taint_unreachable_noschedule_added", "taint_unreachable_noexecute_added"}) {
		t.Errorf("stop: the Unknown after the start is not its reaction; got %+v", got[0])
	}
	if len(got[1].Reactions) != 1 || got[1].Reactions[0].Event != ReadyUnknown {
		t.Errorf("start: reactions %+v, want the Unknown that came after it", got[1].Reactions)
	}
}

func TestExpectedLeavesOutWhatTheNodeAlreadyShows(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   []observe.Transition
		a    Action
		want []string
	}{
		{"start of a Ready node expects nothing", []observe.Transition{cond(0, "n", "Ready", "True")},
			Action{Op: "start"}, nil},
		{"notReady", []observe.Transition{cond(0, "n", "Ready", "True")},
			Action{Op: "notReady"}, []string{ReadyFalse, "taint_not_ready_noschedule_added", "taint_not_ready_noexecute_added"}},
		{"memory pressure", []observe.Transition{cond(0, "n", "MemoryPressure", "False")},
			Action{Op: "condition", Condition: "MemoryPressure", Status: "True"},
			[]string{"memory_pressure_true", "taint_memory_pressure_noschedule_added"}},
		{"pressure relieved", []observe.Transition{cond(0, "n", "DiskPressure", "True"), taint(0, "n", "disk-pressure", "NoSchedule", true)},
			Action{Op: "condition", Condition: "DiskPressure", Status: "False"},
			[]string{"disk_pressure_false", "taint_disk_pressure_noschedule_removed"}},
		{"deleteLease", nil, Action{Op: "deleteLease"}, []string{LeaseRecreated}},
		{"stop of a node with Ready pods", []observe.Transition{cond(0, "n", "Ready", "True"), podT(0, observe.PodReady, "p0")},
			Action{Op: "stop"}, []string{ReadyUnknown, "taint_unreachable_noschedule_added", "taint_unreachable_noexecute_added", PodNotReady}},
		{"stop of a node whose pods were all evicted", []observe.Transition{cond(0, "n", "Ready", "True"),
			podT(0, observe.PodReady, "p0"), podT(1, observe.PodDeleted, "p0")},
			Action{Op: "stop"}, []string{ReadyUnknown, "taint_unreachable_noschedule_added", "taint_unreachable_noexecute_added"}},
		{"start of a node with a pod marked not Ready", []observe.Transition{cond(0, "n", "Ready", "Unknown"),
			podT(0, observe.PodReady, "p0"), podT(0, observe.PodReady, "p1"), podT(1, observe.PodNotReady, "p1")},
			Action{Op: "start"}, []string{ReadyTrue, PodReady}},
		{"latency expects nothing", nil, Action{Op: "latency"}, nil},
	} {
		var st nodeState
		for _, tr := range tc.ts {
			st.apply(tr)
		}
		if got := st.expected(tc.a); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: expected %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSummarizeResults(t *testing.T) {
	actions, phases, ts := recordedRun()
	sums := SummarizeResults(Extract(actions, phases, ts), phases)
	type line struct {
		phase, event              string
		actions, reacted, missing int
	}
	var got []line
	for _, s := range sums {
		got = append(got, line{s.Phase, s.Event, s.Actions, s.Reacted, s.Missing})
	}
	want := []line{
		{"outage", ReadyUnknown, 2, 2, 0},
		{"outage", "taint_unreachable_noschedule_added", 2, 2, 0},
		{"outage", "taint_unreachable_noexecute_added", 2, 1, 1},
		// by median latency from the start: 3 s, 4 s, 4 s (then by name), 5 s
		{"recovery", ReadyTrue, 2, 2, 0},
		{"recovery", "taint_unreachable_noexecute_removed", 2, 1, 0},
		{"recovery", "taint_unreachable_noschedule_removed", 2, 2, 0},
		{"recovery", "taint_unreachable_noexecute_added", 2, 1, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("summaries:\n got %+v\nwant %+v", got, want)
	}
	unknown := sums[0]
	// From the action: 21 s and 23 s. From the last renewal: 31-8 = 23 s and 33-9 = 24 s.
	if w := (Stats{Count: 2, Min: 21, P50: 21, P90: 23, P99: 23, Max: 23}); unknown.FromAction != w {
		t.Errorf("ready_unknown from action %+v, want %+v", unknown.FromAction, w)
	}
	if w := (Stats{Count: 2, Min: 23, P50: 23, P90: 24, P99: 24, Max: 24}); unknown.FromLastRenewal == nil || *unknown.FromLastRenewal != w {
		t.Errorf("ready_unknown from last renewal %+v, want %+v", unknown.FromLastRenewal, w)
	}
	if ne := sums[2]; !reflect.DeepEqual(ne.MissingNodes, []string{"n1"}) {
		t.Errorf("NoExecute never came for %v, want [n1]", ne.MissingNodes)
	}
	if sums[3].FromLastRenewal != nil {
		t.Errorf("a start's latency is not measured from the last renewal: %+v", sums[4].FromLastRenewal)
	}
}

func podT(s float64, kind observe.Kind, name string) observe.Transition {
	return observe.Transition{At: at(s), Node: "n", Kind: kind, Type: name}
}

// A stopped node's pods are marked not Ready, then evicted; the start finds the survivors not Ready
// and its agent reports them Ready again. The eviction is a reaction, and never missing.
func TestExtractPods(t *testing.T) {
	phases := []Phase{{Name: "outage", Start: at(0), End: at(100)}, {Name: "recovery", Start: at(100), End: at(130)}}
	ts := []observe.Transition{
		cond(0, "n", "Ready", "True"), podT(0, observe.PodReady, "p0"), podT(0, observe.PodReady, "p1"),
		cond(30, "n", "Ready", "Unknown"),
		podT(30.5, observe.PodNotReady, "p0"), podT(30.6, observe.PodNotReady, "p1"),
		{At: at(60), Node: "n", Kind: observe.PodDeleted, Type: "p0", Reason: "DeletionByTaintManager"},
		cond(101, "n", "Ready", "True"), podT(101.5, observe.PodReady, "p1"),
	}
	actions := []Action{
		{Phase: "outage", Group: "g", Op: "stop", Node: "n", At: at(10), LastRenewal: at(9)},
		{Phase: "recovery", Group: "g", Op: "start", Node: "n", At: at(100)},
	}
	got := Extract(actions, phases, ts)
	if want := []Reaction{{ReadyUnknown, at(30)}, {PodNotReady, at(30.5)}, {PodEvicted, at(60)}}; !reflect.DeepEqual(got[0].Reactions, want) {
		t.Errorf("stop: reactions %+v, want %+v", got[0].Reactions, want)
	}
	if want := []string{"taint_unreachable_noschedule_added", "taint_unreachable_noexecute_added"}; !reflect.DeepEqual(got[0].Missing, want) {
		t.Errorf("stop: missing %v, want %v (an eviction is never expected)", got[0].Missing, want)
	}
	if want := []Reaction{{ReadyTrue, at(101)}, {PodReady, at(101.5)}}; !reflect.DeepEqual(got[1].Reactions, want) || len(got[1].Missing) != 0 {
		t.Errorf("start: reactions %+v missing %v, want %+v and none", got[1].Reactions, got[1].Missing, want)
	}
}

func TestEventNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{ConditionEvent("MemoryPressure", "True"), "memory_pressure_true"},
		{ConditionEvent("PIDPressure", "False"), "pid_pressure_false"},
		{ConditionEvent("Ready", "Unknown"), ReadyUnknown},
		{TaintEvent("node.kubernetes.io/not-ready", "NoSchedule", true), "taint_not_ready_noschedule_added"},
		{TaintEvent("example.com/dedicated", "NoExecute", false), "taint_example_com_dedicated_noexecute_removed"},
		{EventOf(observe.Transition{Kind: observe.PodDeleted, Reason: "DeletionByTaintManager"}), PodEvicted},
		{EventOf(observe.Transition{Kind: observe.PodDeleted, Reason: "DeletionByPodGC"}), PodDeleted},
		{EventOf(observe.Transition{Kind: observe.PodNotReady}), PodNotReady},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
