package profiles

import (
	"container/heap"
	"time"
)

// stream yields the events of one action in order of (At, Node).
type stream interface {
	next() (Event, bool)
}

// listStream applies one op to a list of nodes, the k-th of n at at(k, n). at must not decrease with k,
// and nodes must ascend, so that the events come in order.
type listStream struct {
	tmpl  Event
	nodes []int
	at    func(k, n int) time.Duration
	k     int
}

func (s *listStream) next() (Event, bool) {
	if s.k >= len(s.nodes) {
		return Event{}, false
	}
	ev := s.tmpl
	ev.Node, ev.At = s.nodes[s.k], s.at(s.k, len(s.nodes))
	s.k++
	return ev, true
}

// rangeStream is a listStream over the nodes first .. first+n-1, without a list.
type rangeStream struct {
	tmpl     Event
	first, n int
	at       func(k, n int) time.Duration
	k        int
}

func (s *rangeStream) next() (Event, bool) {
	if s.k >= s.n {
		return Event{}, false
	}
	ev := s.tmpl
	ev.Node, ev.At = s.first+s.k, s.at(s.k, s.n)
	s.k++
	return ev, true
}

// flapStream expands a flap action into the stop and start events of its members. Member k starts
// flapping at base plus its stagger over the spread; in cycle c it stops at c periods later and starts
// again duty x period after that, each delayed by its own seeded jitter in [0, jitter). A cycle whose
// start would fall at or after the phase's end is not begun, so every member is running when the phase
// ends.
type flapStream struct {
	tmpl         Event
	period, down time.Duration
	jitter       time.Duration
	end          time.Duration
	key          uint64
	members      orderedHeap[flapMember] // by their next event: (at, node)
}

// flapMember is where one member is in its flapping.
type flapMember struct {
	node    int
	start   time.Duration // when the member's first cycle begins
	cycle   int
	stopped bool // whether its next event is the start of the current cycle
	at      time.Duration
}

func newFlapStream(plan *Plan, a *Action, tmpl Event, members []int, base, end time.Duration) *flapStream {
	period := a.Period.Duration
	s := &flapStream{
		tmpl:   tmpl,
		period: period,
		down:   time.Duration(float64(period) * *a.Duty),
		jitter: a.Jitter.Duration,
		end:    end,
		key:    hashOf(hashKey(plan.Seed, "flap"), uint64(tmpl.Phase), uint64(tmpl.Action)),
	}
	s.members = orderedHeap[flapMember]{items: make([]flapMember, 0, len(members)), less: flapBefore}
	for k, node := range members {
		m := flapMember{node: node, start: base + stagger(a.Spread.Duration, k, len(members))}
		if s.schedule(&m) {
			s.members.items = append(s.members.items, m)
		}
	}
	heap.Init(&s.members)
	return s
}

// Jitter draws are told apart by what they delay.
const (
	jitterStop  = 0
	jitterStart = 1
)

// jitterOf draws a delay in [0, jitter), in whole milliseconds: finer would only make schedules harder
// to read, as no agent acts that precisely.
func (s *flapStream) jitterOf(node, cycle int, which uint64) time.Duration {
	steps := uint64(s.jitter / time.Millisecond)
	if steps == 0 {
		return 0
	}
	return time.Duration(hashOf(s.key, uint64(node), uint64(cycle), which)%steps) * time.Millisecond
}

// schedule sets m.at to the time of m's next event, and reports false when m is done: the next cycle
// would not end (with a start) before the phase does.
func (s *flapStream) schedule(m *flapMember) bool {
	cycleStart := m.start + time.Duration(m.cycle)*s.period
	if m.stopped {
		m.at = cycleStart + s.down + s.jitterOf(m.node, m.cycle, jitterStart)
		return true
	}
	if cycleStart+s.down+s.jitterOf(m.node, m.cycle, jitterStart) >= s.end {
		return false
	}
	m.at = cycleStart + s.jitterOf(m.node, m.cycle, jitterStop)
	return true
}

func (s *flapStream) next() (Event, bool) {
	if s.members.Len() == 0 {
		return Event{}, false
	}
	m := &s.members.items[0]
	ev := s.tmpl
	ev.Node, ev.At, ev.Op = m.node, m.at, OpStop
	if m.stopped {
		ev.Op = OpStart
		m.cycle++
	}
	m.stopped = !m.stopped
	if s.schedule(m) {
		heap.Fix(&s.members, 0)
	} else {
		heap.Pop(&s.members)
	}
	return ev, true
}

func flapBefore(a, b *flapMember) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.node < b.node
}
