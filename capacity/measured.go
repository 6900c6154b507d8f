package capacity

import "fakelet.dev/fakelet/measure/load"

// NodePriorityLevel is the API Priority and Fairness level of kubelets' requests (the system-nodes
// flow schema): the node traffic whose rejections count.
const NodePriorityLevel = "node-high"

// mutating are the fleet's mutating single-object calls as the apiserver's metrics name them: the
// lease renewal and the status patch.
var mutating = []struct{ verb, resource, subresource string }{
	{"PUT", "leases", ""},
	{"PATCH", "nodes", "status"},
}

// FromLoad reads a step's levels from the load of its hold (the apiserver's scrapes, package load),
// with what the fleet itself counted: its false alarms, failed heartbeats and the p99 of its lease
// renewal interval in seconds (0 in status mode). The mutating p99 is the higher of the two calls'.
func FromLoad(p load.Phase, falseAlarms int, failedHeartbeats int64, renewalP99 float64) Measured {
	m := Measured{FalseAlarms: falseAlarms, FailedHeartbeats: failedHeartbeats, RenewalP99: renewalP99}
	for _, l := range p.Latency {
		for _, k := range mutating {
			if l.Verb == k.verb && l.Resource == k.resource && l.Subresource == k.subresource && l.Count > 0 {
				m.MutatingP99 = max(m.MutatingP99, l.P99)
			}
		}
	}
	for _, pl := range p.PriorityLevels {
		if pl.Name == NodePriorityLevel {
			m.APFRejections += pl.Rejected
		}
	}
	return m
}
