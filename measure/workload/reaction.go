package workload

import (
	"slices"
	"time"
)

// The steps of a workload's reaction to an op that breaks nodes, in the order they come. Each is
// timed from the op's arrival at the node of the pod it concerns (for a replacement, of the pod it
// replaces).
const (
	// StepNotReady: an affected pod's Ready condition turned False (the node lifecycle controller's
	// MarkPodsNotReady, or the kubelet's own status).
	StepNotReady = "podNotReady"
	// StepEndpointNotReady: its address turned not ready in its Service's EndpointSlices, or left them.
	StepEndpointNotReady = "endpointNotReady"
	// StepEvicted: it was marked for eviction (DisruptionTarget) or for deletion, whichever came first.
	StepEvicted = "evicted"
	// StepReplacementCreated: a pod of the same workload was created after it was evicted.
	StepReplacementCreated = "replacementCreated"
	// StepScheduledElsewhere: the replacement was bound to a node the op did not break.
	StepScheduledElsewhere = "scheduledElsewhere"
	// StepReplacementRunning and StepReplacementReady: the replacement Running, then Ready.
	StepReplacementRunning = "replacementRunning"
	StepReplacementReady   = "replacementReady"
	// StepReadyInPlace: an affected pod that was not evicted turned Ready again on its node.
	StepReadyInPlace = "readyInPlace"
	// StepDeploymentAvailable: a Deployment with affected pods had every replica available again,
	// after it had fewer (timed from the op's first arrival at one of its pods' nodes).
	StepDeploymentAvailable = "deploymentAvailable"
)

// Steps lists the steps in the order they come.
var Steps = []string{StepNotReady, StepEndpointNotReady, StepEvicted, StepReplacementCreated, StepScheduledElsewhere,
	StepReplacementRunning, StepReplacementReady, StepReadyInPlace, StepDeploymentAvailable}

// Step is how long after the op the pods (or Deployments) of one step got there: the first, the
// median and the last, in seconds.
type Step struct {
	Name   string  `json:"name"`
	Count  int     `json:"count"`
	First  float64 `json:"first"`
	Median float64 `json:"median"`
	Last   float64 `json:"last"`
}

// Reaction is a workload's reaction to one action that broke nodes, in one phase, on one group.
type Reaction struct {
	Phase string `json:"phase"`
	Group string `json:"group"`
	Op    string `json:"op"`
	// Nodes counts the nodes the op reached; Pods the workloads' pods on them when it did (bound, not
	// being deleted).
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
	// Running counts the workloads' pods Running anywhere when the op began: with none, an op that
	// reached no pod is not a workload that rode the outage out, but one that never ran.
	Running int    `json:"running"`
	Steps   []Step `json:"steps"`
	// Lost counts the affected pods neither Ready again on their node nor replaced by a pod Ready by
	// the end (the profile's last phase's): the pods lost for good.
	Lost int `json:"lost"`
}

// reactions computes each breaking action's reaction from the events up to end. r.mu must be held.
func (r *Recorder) reactions(end time.Time) []Reaction {
	used := map[*podState]bool{} // replacements already paired, over every action in time order
	byWorkload := map[string][]*podState{}
	for _, uid := range r.order {
		if p := r.pods[uid]; p.workload != "" {
			byWorkload[p.workload] = append(byWorkload[p.workload], p)
		}
	}
	breaks := slices.Clone(r.breaks)
	slices.SortStableFunc(breaks, func(a, b *breakOp) int { return a.first.Compare(b.first) })
	var out []Reaction
	for _, b := range breaks {
		rp := &replacements{byWorkload: byWorkload, used: used, next: map[string]int{}, end: end}
		out = append(out, r.reaction(b, end, rp))
	}
	return out
}

func (r *Recorder) reaction(b *breakOp, end time.Time, rp *replacements) Reaction {
	steps := map[string][]float64{}
	since := func(step string, from, at time.Time) bool {
		if at.IsZero() || at.After(end) {
			return false
		}
		steps[step] = append(steps[step], at.Sub(from).Seconds())
		return true
	}
	type evicted struct {
		p      *podState
		op, at time.Time
	}
	var (
		affected []*podState
		evicts   []evicted
		lost     int
	)
	firstByWorkload := map[string]time.Time{}
	running := 0
	for _, uid := range r.order {
		p := r.pods[uid]
		if p.workload != "" && !p.running.IsZero() && !p.running.After(b.first) && p.gone(b.first).IsZero() {
			running++
		}
		opAt, ok := b.nodes[p.node]
		if !ok || p.scheduled.IsZero() || p.scheduled.After(opAt) || !p.gone(opAt).IsZero() {
			continue
		}
		affected = append(affected, p)
		if f, ok := firstByWorkload[p.workload]; !ok || opAt.Before(f) {
			firstByWorkload[p.workload] = opAt
		}
		since(StepNotReady, opAt, p.first(opAt, evNotReady))
		since(StepEndpointNotReady, opAt, p.first(opAt, evEndpointNotReady))
		if at := p.first(opAt, evDisrupted, evDeleting, evDeleted); !at.IsZero() && !at.After(end) {
			since(StepEvicted, opAt, at)
			evicts = append(evicts, evicted{p, opAt, at})
			continue
		}
		if notReady := p.first(opAt, evNotReady); !notReady.IsZero() {
			if !since(StepReadyInPlace, opAt, p.first(notReady, evReady)) {
				lost++
			}
		}
	}
	slices.SortStableFunc(evicts, func(a, b evicted) int { return a.at.Compare(b.at) })
	for _, e := range evicts {
		q := rp.of(e.p, e.at)
		if q == nil {
			lost++
			continue
		}
		since(StepReplacementCreated, e.op, q.firstSeen)
		if _, broken := b.nodes[q.node]; !broken {
			since(StepScheduledElsewhere, e.op, q.scheduled)
		}
		since(StepReplacementRunning, e.op, q.running)
		if !since(StepReplacementReady, e.op, q.first(q.firstSeen, evReady)) {
			lost++
		}
	}
	for w, from := range firstByWorkload {
		d := r.deployments[w]
		if d == nil {
			continue
		}
		var down bool
		for _, t := range d.transitions.Items() {
			if t.At.Before(from) || t.At.After(end) {
				continue
			}
			if !t.Available {
				down = true
			} else if down {
				since(StepDeploymentAvailable, from, t.At)
				break
			}
		}
	}
	re := Reaction{Phase: b.phase, Group: b.group, Op: b.op, Nodes: len(b.nodes), Pods: len(affected), Running: running, Lost: lost}
	for _, name := range Steps {
		if s := steps[name]; len(s) > 0 {
			slices.Sort(s)
			re.Steps = append(re.Steps, Step{Name: name, Count: len(s), First: s[0], Median: s[(len(s)-1)/2], Last: s[len(s)-1]})
		}
	}
	return re
}

// gone is when p was being deleted or gone at or before t, zero if it was not.
func (p *podState) gone(t time.Time) time.Time {
	for _, e := range p.events {
		if e.at.After(t) {
			break
		}
		if e.kind == evDeleting || e.kind == evDeleted {
			return e.at
		}
	}
	return time.Time{}
}

// replacements pairs the evicted pods of one action with their replacements: the first pod of the
// evicted pod's workload first seen at or after its eviction and by end, not already paired (a
// ReplicaSet replaces a pod once it is being deleted, so the k-th evicted pod's replacement is the
// k-th pod created after it). Evictions come in order of time, so each workload's candidates, in
// the order first seen, are walked once.
type replacements struct {
	byWorkload map[string][]*podState // in the order first seen
	used       map[*podState]bool     // paired already, by this action or an earlier one
	next       map[string]int         // per workload, the first candidate not yet passed
	end        time.Time
}

func (rp *replacements) of(p *podState, evicted time.Time) *podState {
	if p.workload == "" {
		return nil
	}
	list := rp.byWorkload[p.workload]
	for i := rp.next[p.workload]; i < len(list); i++ {
		q := list[i]
		if q.firstSeen.After(rp.end) {
			return nil
		}
		if q == p || rp.used[q] || q.firstSeen.Before(evicted) {
			// Passed for every later eviction too: p and the pods seen before its eviction were
			// seen before theirs.
			rp.next[p.workload] = i + 1
			continue
		}
		rp.used[q] = true
		rp.next[p.workload] = i + 1
		return q
	}
	return nil
}
