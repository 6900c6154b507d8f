package storm

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"fakelet.dev/fakelet/agent"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func req(verb, resource string, sent time.Duration, err error) agent.Request {
	return agent.Request{Verb: verb, Resource: resource, Sent: at(sent), Err: err}
}

// Three nodes restart in one second; their requests count by second and kind until the last is back.
func TestAStormFromFallToTheLastRecovery(t *testing.T) {
	r := NewRecorder()
	r.Request(req("update", "leases", 0, nil)) // before any storm: not kept
	r.Recovered("n0", at(0))                   // a first start: no storm
	for i, n := range []string{"n0", "n1", "n2"} {
		r.Disrupted(n, agent.DisruptedProcess, at(10*time.Second+time.Duration(i)*100*time.Millisecond))
	}
	tooMany := apierrors.NewTooManyRequests("slow down", 1)
	for _, q := range []agent.Request{
		req("watch", "pods", 10*time.Second, nil), req("watch", "pods", 10*time.Second+500*time.Millisecond, nil),
		req("watch", "pods", 10*time.Second+900*time.Millisecond, tooMany), req("watch", "nodes", 10*time.Second, nil),
		req("get", "nodes", 11*time.Second, nil), req("watch", "pods", 12*time.Second, nil),
		req("watch", "pods", 12*time.Second+100*time.Millisecond, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x")),
	} {
		r.Request(q)
	}
	r.Recovered("n1", at(11*time.Second))
	r.Recovered("n1", at(11*time.Second)) // not behind any more: nothing
	r.Disrupted("n1", agent.DisruptedWatch, at(11500*time.Millisecond))
	r.Recovered("n0", at(12*time.Second))
	r.Recovered("n2", at(12*time.Second))
	if storms, _ := r.Storms(); len(storms) != 1 || !storms[0].End.IsZero() || storms[0].Recovered != 2 {
		t.Fatalf("with n1 behind again: %+v, want one storm under way", storms)
	}
	r.Recovered("n1", at(13*time.Second+200*time.Millisecond))
	r.Request(req("update", "leases", 14*time.Second, nil)) // after the storm: not kept

	storms, dropped := r.Storms()
	if len(storms) != 1 || dropped != 0 {
		t.Fatalf("%d storms (%d dropped), want 1", len(storms), dropped)
	}
	s := storms[0]
	if !s.Start.Equal(at(10*time.Second)) || !s.End.Equal(at(13*time.Second+200*time.Millisecond)) {
		t.Errorf("storm %v to %v", s.Start, s.End)
	}
	if s.Nodes != 3 || s.Recovered != 3 || s.Causes[agent.DisruptedProcess] != 3 || s.Causes[agent.DisruptedWatch] != 1 {
		t.Errorf("nodes %d, recovered %d, causes %v", s.Nodes, s.Recovered, s.Causes)
	}
	if len(s.Seconds) != 4 {
		t.Fatalf("%d seconds, want 4: %+v", len(s.Seconds), s.Seconds)
	}
	first := s.Seconds[0]
	if first.Requests["watch pods"] != 3 || first.Requests["watch nodes"] != 1 || first.Throttled != 1 || first.Recovered != 0 {
		t.Errorf("second 0: %+v", first)
	}
	if s.Seconds[1].Requests["get nodes"] != 1 || s.Seconds[1].Recovered != 1 {
		t.Errorf("second 1: %+v", s.Seconds[1])
	}
	if s.Seconds[2].Requests["watch pods"] != 2 || s.Seconds[2].Throttled != 0 || s.Seconds[2].Recovered != 2 {
		t.Errorf("second 2: %+v", s.Seconds[2])
	}
	if s.Seconds[3].Recovered != 1 || len(s.Seconds[3].Requests) != 0 {
		t.Errorf("second 3: %+v", s.Seconds[3])
	}
}

// A node churn removed does not keep a storm open; a storm of removals only is none.
func TestForgottenNodesEndAStorm(t *testing.T) {
	r := NewRecorder()
	r.Disrupted("gone", agent.DisruptedProcess, at(0))
	r.Forget("gone", at(time.Second))
	if storms, _ := r.Storms(); len(storms) != 0 {
		t.Errorf("removals only: %+v", storms)
	}
	r.Disrupted("a", agent.DisruptedProcess, at(2*time.Second))
	r.Disrupted("gone2", agent.DisruptedProcess, at(2*time.Second))
	r.Recovered("a", at(3*time.Second))
	r.Forget("gone2", at(4*time.Second))
	storms, _ := r.Storms()
	if len(storms) != 1 || storms[0].Nodes != 1 || !storms[0].End.Equal(at(4*time.Second)) {
		t.Errorf("storms %+v, want one of node a ending when gone2 was removed", storms)
	}
}

// Memory is bounded: a storm keeps MaxSeconds seconds, a run MaxStorms storms.
func TestStormsAreBounded(t *testing.T) {
	r := NewRecorder()
	r.Disrupted("a", agent.DisruptedProcess, at(0))
	for s := 0; s < MaxSeconds+100; s++ {
		r.Request(req("get", "nodes", time.Duration(s)*time.Second, nil))
	}
	r.Recovered("a", at(time.Hour))
	for i := 1; i < MaxStorms+5; i++ {
		r.Disrupted("a", agent.DisruptedProcess, at(time.Hour+time.Duration(i)*time.Minute))
		r.Recovered("a", at(time.Hour+time.Duration(i)*time.Minute+time.Second))
	}
	storms, dropped := r.Storms()
	if len(storms) != MaxStorms || dropped != 5 {
		t.Errorf("%d storms, %d dropped; want %d and 5", len(storms), dropped, MaxStorms)
	}
	if n := len(storms[0].Seconds); n != MaxSeconds {
		t.Errorf("the long storm kept %d seconds, want %d", n, MaxSeconds)
	}
}
