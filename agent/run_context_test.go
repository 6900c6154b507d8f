package agent

import (
	"context"
	"errors"
	"testing"
	"time"
)

func ended(t *testing.T, what string, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}

// A context derived from a run's, as a request's timeout is, is registered with the run's until it
// is done, and then nothing of it is kept; the run's end ends those still alive.
func TestARunKeepsNothingOfAContextDerivedFromItOnceDone(t *testing.T) {
	var rc runContext
	rc.init(context.Background(), &Agent{name: "n1", user: NodeUserPrefix + "n1"})
	cc := &callContext{run: &rc, meter: &Meter{}}
	_, cancel := context.WithTimeout(cc, time.Hour)
	if len(rc.afters) != 1 {
		t.Fatalf("a context derived from the run's is registered %d times with it, want once (not on a goroutine)", len(rc.afters))
	}
	cancel()
	if rc.afters != nil {
		t.Errorf("the run keeps %d registrations, and their map, after its only child was done", len(rc.afters))
	}
	alive, cancelAlive := context.WithTimeout(cc, time.Hour)
	defer cancelAlive()
	rc.cancel(context.Canceled)
	ended(t, "the run's context", &rc)
	ended(t, "a context derived from the run's", alive)
	if !errors.Is(alive.Err(), context.Canceled) || !errors.Is(rc.Err(), context.Canceled) || !errors.Is(cc.Err(), context.Canceled) {
		t.Errorf("errors after the run ended: child %v, run %v, loop %v", alive.Err(), rc.Err(), cc.Err())
	}
	// A context derived from an ended run ends at once.
	late, cancelLate := context.WithCancel(cc)
	defer cancelLate()
	ended(t, "a context derived from an ended run's", late)
}

// A run's context ends with the one its Start was given.
func TestARunContextEndsWithItsParent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	var rc runContext
	rc.init(parent, &Agent{name: "n1"})
	child, cancelChild := context.WithCancel(&callContext{run: &rc})
	defer cancelChild()
	cancel()
	ended(t, "the run's context", &rc)
	ended(t, "a context derived from the run's", child)
	if !errors.Is(rc.Err(), context.Canceled) {
		t.Errorf("the run's context ended with %v", rc.Err())
	}

	// Started within an ended context, it is ended too.
	var late runContext
	late.init(parent, &Agent{name: "n2"})
	ended(t, "a run's context of an ended parent", &late)
	if _, ok := runsByParent.Load(parent); ok {
		t.Error("the runs of an ended context are still kept")
	}
}

// The runs of one context end with it, and one that ended before keeps no place among them.
func TestTheRunsOfAContextEndWithIt(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	runs := make([]runContext, 100)
	for i := range runs {
		runs[i].init(parent, &Agent{name: "n"})
	}
	runs[0].cancel(context.Canceled)
	p, _ := runsByParent.Load(parent)
	if n := len(p.(*parentRuns).runs); n != len(runs)-1 {
		t.Errorf("%d runs kept for their parent's end, want %d", n, len(runs)-1)
	}
	cancel()
	for i := range runs {
		ended(t, "a run of an ended context", &runs[i])
	}
}

// notComparable is a context that cannot key a map.
type notComparable struct {
	context.Context
	_ []int
}

// A run in a context that cannot key the runs of its parent ends with it all the same.
func TestARunInAContextThatCannotKeyAMapEndsWithIt(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	var rc runContext
	rc.init(notComparable{Context: parent}, &Agent{name: "n1"})
	cancel()
	ended(t, "the run's context", &rc)
}

// A loop's context carries the agent's identity, the loop's Meter and its parent's values.
func TestALoopsContextCarriesTheRunsValues(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "fleet")
	var rc runContext
	rc.init(parent, &Agent{name: "n1", user: NodeUserPrefix + "n1"})
	m := &Meter{}
	cc := &callContext{run: &rc, meter: m}
	if user, _, ok := IdentityFrom(cc); !ok || user != NodeUserPrefix+"n1" {
		t.Errorf("identity %q %v", user, ok)
	}
	if MeterFrom(cc) != m || cc.Value(key{}) != "fleet" {
		t.Errorf("meter %p (want %p), parent's value %v", MeterFrom(cc), m, cc.Value(key{}))
	}
	if _, ok := cc.Deadline(); ok {
		t.Error("a deadline where the parent has none")
	}
}
