package observe

import "time"

// maxGridPoints bounds a ReadyTimeline: when its grid would hold more points, every other point is
// dropped and the grid's step doubles, so a run of any length keeps between half and all of them.
const maxGridPoints = 4096

// ReadyTimeline counts the nodes by Ready status as the transitions arrive, and keeps the counts at
// the points of a grid, so that the timeline of a run of hours takes bounded memory instead of every
// transition. Sampled at a step no finer than its grid's, it gives what Timeline gives for the same
// transitions; finer, a sample may be up to one grid step old.
type ReadyTimeline struct {
	state  map[string]string // node -> Ready status; nil in a copy
	counts StateCount
	origin time.Time     // the first transition's second: points[k] is at origin + k*step
	step   time.Duration // doubles as the grid thins
	points []StateCount
}

func newReadyTimeline() *ReadyTimeline {
	return &ReadyTimeline{state: map[string]string{}, step: time.Second}
}

// add takes one transition, in order of arrival (of time).
func (rt *ReadyTimeline) add(t Transition) {
	if t.Kind != Condition || t.Type != "Ready" {
		return
	}
	if rt.origin.IsZero() {
		rt.origin = t.At.Truncate(time.Second) // samples at whole seconds fall on the grid
	}
	// Every grid time before t has seen all its transitions: keep the counts as they are at it.
	for rt.origin.Add(time.Duration(len(rt.points)) * rt.step).Before(t.At) {
		rt.points = append(rt.points, rt.counts)
		if len(rt.points) > maxGridPoints {
			rt.thin()
		}
	}
	if prev, ok := rt.state[t.Node]; ok {
		*rt.count(prev)--
	}
	rt.state[t.Node] = t.Status
	*rt.count(t.Status)++
}

func (rt *ReadyTimeline) count(status string) *int {
	switch status {
	case "True":
		return &rt.counts.Ready
	case "False":
		return &rt.counts.NotReady
	case "Unknown":
		return &rt.counts.Unknown
	}
	var other int // a status Timeline does not count either
	return &other
}

// thin keeps every other point and doubles the step.
func (rt *ReadyTimeline) thin() {
	n := 0
	for i := 0; i < len(rt.points); i += 2 {
		rt.points[n] = rt.points[i]
		n++
	}
	rt.points = rt.points[:n]
	rt.step *= 2
}

// at returns the counts at t.
func (rt *ReadyTimeline) at(t time.Time) StateCount {
	var c StateCount
	switch {
	case rt.origin.IsZero() || t.Before(rt.origin):
	case int(t.Sub(rt.origin)/rt.step) < len(rt.points):
		c = rt.points[t.Sub(rt.origin)/rt.step]
	default: // after every grid point kept, so after every transition
		c = rt.counts
	}
	c.At = t
	return c
}

// Sample returns the counts at start, every step after it and at end, as Timeline does.
func (rt *ReadyTimeline) Sample(start, end time.Time, step time.Duration) []StateCount {
	if step <= 0 || end.Before(start) {
		return nil
	}
	var out []StateCount
	for at := start; at.Before(end); at = at.Add(step) {
		out = append(out, rt.at(at))
	}
	return append(out, rt.at(end))
}

// copy returns the timeline without the per-node state, which sampling does not need.
func (rt *ReadyTimeline) copy() *ReadyTimeline {
	c := *rt
	c.state = nil
	c.points = append([]StateCount(nil), rt.points...)
	return &c
}
