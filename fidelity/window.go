package fidelity

import "time"

// Window is a span of time in which requests are counted.
type Window struct {
	Name string
	// From and To bound the window, [From, To), for every node alike.
	From, To time.Time
	// FromFirst, if set, makes the window each node's own: from its first request in the log to
	// FromFirst later (the startup window, since nodes start a little apart). From and To are ignored.
	FromFirst time.Duration
	// Pods, if set, holds the pods each node was given in the window (placed there by the
	// scheduler): Compare counts the classes a kubelet sends for each of its pods (Class.PerPod)
	// per pod, so that a node that got more pods than another does not look busier for it.
	Pods map[string]int
}

// PodsPerNode is the mean of w.Pods over nodes: a node w.Pods does not name got none.
func (w Window) PodsPerNode(nodes []string) float64 {
	if len(nodes) == 0 {
		return 0
	}
	n := 0
	for _, node := range nodes {
		n += w.Pods[node]
	}
	return float64(n) / float64(len(nodes))
}

// Counts holds requests by window name, node and class.
type Counts map[string]map[string]map[Class]int

// Count counts the requests of nodes (Request.Node not empty) in each window. A request may fall in
// several windows if they overlap.
func Count(reqs []Request, windows []Window) Counts {
	first := map[string]time.Time{}
	for _, r := range reqs {
		if r.Node == "" {
			continue
		}
		if t, ok := first[r.Node]; !ok || r.At.Before(t) {
			first[r.Node] = r.At
		}
	}
	c := Counts{}
	for _, w := range windows {
		byNode := map[string]map[Class]int{}
		c[w.Name] = byNode
		for _, r := range reqs {
			if r.Node == "" {
				continue
			}
			from, to := w.From, w.To
			if w.FromFirst > 0 {
				from = first[r.Node]
				to = from.Add(w.FromFirst)
			}
			if r.At.Before(from) || !r.At.Before(to) {
				continue
			}
			if byNode[r.Node] == nil {
				byNode[r.Node] = map[Class]int{}
			}
			byNode[r.Node][r.Class]++
		}
	}
	return c
}

// PerNode is the mean count of each class over nodes in window: a node that sent none of a class
// counts as 0, so the mean is over all of them.
func (c Counts) PerNode(window string, nodes []string) map[Class]float64 {
	out := map[Class]float64{}
	if len(nodes) == 0 {
		return out
	}
	for _, n := range nodes {
		for cl, k := range c[window][n] {
			out[cl] += float64(k)
		}
	}
	for cl := range out {
		out[cl] /= float64(len(nodes))
	}
	return out
}
