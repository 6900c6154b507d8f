package reaction

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/observe"
)

// TestTrackerMatchesExtract: actions and transitions fed to a Tracker in order of time, with the
// phases' ends as they pass, give the summaries Extract and SummarizeResults give for the whole record.
func TestTrackerMatchesExtract(t *testing.T) {
	actions, phases, ts := recordedRun()
	want := SummarizeResults(Extract(actions, phases, ts), phases)

	type item struct {
		at     time.Time
		action *Action
		t      *observe.Transition
		phase  *Phase
	}
	var items []item
	for i := range actions {
		items = append(items, item{at: actions[i].At, action: &actions[i]})
	}
	for i := range ts {
		items = append(items, item{at: ts[i].At, t: &ts[i]})
	}
	for i := range phases {
		items = append(items, item{at: phases[i].End, phase: &phases[i]})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	tr := NewTracker()
	for _, it := range items {
		switch {
		case it.action != nil:
			tr.Applied(*it.action)
		case it.t != nil:
			tr.Observe(*it.t)
		default:
			tr.PhaseEnded(it.phase.Name, it.phase.End)
		}
	}
	if got := tr.Summaries(phases); !reflect.DeepEqual(got, want) {
		t.Errorf("tracker:\n%+v\nwant (Extract):\n%+v", got, want)
	}
	if again := tr.Summaries(phases); !reflect.DeepEqual(again, want) {
		t.Errorf("a second Summaries differs: it must not close the open actions")
	}
}

// TestSummariesKeepBoundedSamples: beyond MaxSamples reactions of one kind, a summary keeps
// MaxSamples latencies, says how many there were, and keeps the exact count, minimum and maximum.
func TestSummariesKeepBoundedSamples(t *testing.T) {
	ac := NewAccumulator()
	n := 3*MaxSamples + 7
	for i := range n {
		a := Action{Phase: "p", Group: "g", Op: "notReady", Node: "n", At: at(float64(i))}
		ac.Add(Result{Action: a, Reactions: []Reaction{{Event: ReadyFalse, At: a.At.Add(time.Duration(i%1000+1) * time.Millisecond)}}})
	}
	s := ac.Summaries(nil)
	if len(s) != 1 {
		t.Fatalf("%d summaries, want 1", len(s))
	}
	got := s[0]
	if len(got.Samples) != MaxSamples || got.SamplesOf != n || got.Reacted != n || got.Actions != n {
		t.Errorf("%d samples of %d, %d reacted of %d actions; want %d of %d", len(got.Samples), got.SamplesOf, got.Reacted, got.Actions, MaxSamples, n)
	}
	if st := got.FromAction; st.Count != n || st.Min != 0.001 || st.Max != 1 || st.P50 < 0.45 || st.P50 > 0.55 {
		t.Errorf("stats %+v: want the exact count, 0.001 and 1 s extremes and a median near 0.5 s", st)
	}
}
