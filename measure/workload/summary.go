package workload

import (
	"time"

	"fakelet.dev/fakelet/measure/reaction"
)

// Summary is what a run's workloads did, for its report (report.json's workloads).
type Summary struct {
	// Namespace is the workloads' namespace.
	Namespace string `json:"namespace"`
	// Pods counts the pods followed; PodsDropped those past MaxPods.
	Pods        int `json:"pods"`
	PodsDropped int `json:"podsDropped,omitempty"`
	// Startup is the pods' startup latency (the SIG Scalability SLI); Throughput the scheduler's, per
	// phase.
	Startup    StartupLatency `json:"startup"`
	Throughput []Throughput   `json:"throughput,omitempty"`
	// Reactions are the workloads' reactions to each action that broke nodes.
	Reactions []Reaction `json:"reactions,omitempty"`
}

// Summary summarises what the Recorder saw up to end, in phases.
func (r *Recorder) Summary(namespace string, phases []reaction.Phase, end time.Time) *Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Summary{
		Namespace: namespace, Pods: len(r.pods), PodsDropped: r.dropped,
		Startup:    r.startupLatency(),
		Throughput: r.throughput(phases),
		Reactions:  r.reactions(end),
	}
}
