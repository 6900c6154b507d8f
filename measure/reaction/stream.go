package reaction

import (
	"maps"
	"time"

	"fakelet.dev/fakelet/measure/observe"
)

// Tracker pairs actions with the reactions that follow them as both arrive, as Extract does for a
// whole record, and folds each action's result into an Accumulator once its window closed (the
// node's next action, or its phase's end). It keeps each node's state and open action, not the
// transitions and actions themselves, so that a run of hours takes memory bounded by its nodes.
// It is not safe for concurrent use.
type Tracker struct {
	nodes     map[string]*trackedNode
	phaseEnds map[string]time.Time
	acc       *Accumulator
	actions   int
}

type trackedNode struct {
	state nodeState // replayed from every transition seen
	open  *openAction
}

// openAction is a node's latest action and what followed it so far.
type openAction struct {
	result Result
	// expected are the events the action should cause, from the node's state at the action.
	expected []string
	// moved says a transition after the action was seen: the node's state is no longer the one at
	// the action.
	moved bool
	seen  map[string]bool
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{nodes: map[string]*trackedNode{}, phaseEnds: map[string]time.Time{}, acc: NewAccumulator()}
}

func (tr *Tracker) node(name string) *trackedNode {
	n := tr.nodes[name]
	if n == nil {
		n = &trackedNode{}
		tr.nodes[name] = n
	}
	return n
}

// Observe takes one transition, in order of arrival.
func (tr *Tracker) Observe(t observe.Transition) {
	n := tr.node(t.Node)
	n.state.apply(t)
	o := n.open
	switch {
	case o == nil:
	case t.At.After(o.result.At):
		o.moved = true
		if ev := EventOf(t); ev != "" && !o.seen[ev] {
			o.seen[ev] = true
			o.result.Reactions = append(o.result.Reactions, Reaction{Event: ev, At: t.At})
		}
	case !o.moved: // arrived late, but happened by the action: part of the state it acted on
		o.expected = n.state.expected(o.result.Action)
	}
}

// Applied takes an action as it takes effect; it closes the node's previous action.
func (tr *Tracker) Applied(a Action) {
	tr.actions++
	n := tr.node(a.Node)
	if o := n.open; o != nil {
		end := tr.phaseEnds[o.result.Phase]
		if end.IsZero() || a.At.Before(end) {
			end = a.At
		}
		tr.acc.Add(o.close(end))
	}
	n.open = &openAction{result: Result{Action: a}, expected: n.state.expected(a), seen: map[string]bool{}}
}

// PhaseEnded records when a phase ended, which ends the window of its actions.
func (tr *Tracker) PhaseEnded(name string, at time.Time) { tr.phaseEnds[name] = at }

// Open returns the node's latest action, for a caller to amend (LastRenewal); nil if none.
func (tr *Tracker) Open(node string) *Action {
	if n := tr.nodes[node]; n != nil && n.open != nil {
		return &n.open.result.Action
	}
	return nil
}

// Actions is how many actions the tracker took.
func (tr *Tracker) Actions() int { return tr.actions }

// Summaries returns the summaries of every action so far, the open ones closed at their phase's end
// in phases (or as PhaseEnded recorded it), without closing them in the tracker.
func (tr *Tracker) Summaries(phases []Phase) []Summary {
	ends := maps.Clone(tr.phaseEnds)
	for _, p := range phases {
		ends[p.Name] = p.End
	}
	acc := tr.acc.clone()
	for _, n := range tr.nodes {
		if n.open != nil {
			acc.Add(n.open.close(ends[n.open.result.Phase]))
		}
	}
	return acc.Summaries(phases)
}

// close returns the action's result with the reactions before end (zero: no end) and the expected
// events that did not come.
func (o *openAction) close(end time.Time) Result {
	r := o.result
	r.Reactions = nil
	seen := map[string]bool{}
	for _, re := range o.result.Reactions {
		if end.IsZero() || re.At.Before(end) {
			r.Reactions = append(r.Reactions, re)
			seen[re.Event] = true
		}
	}
	for _, ev := range o.expected {
		if !seen[ev] {
			r.Missing = append(r.Missing, ev)
		}
	}
	return r
}
