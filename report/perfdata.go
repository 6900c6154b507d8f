package report

import (
	"encoding/json"
	"fmt"
	"io"

	"fakelet.dev/fakelet/measure/reaction"
)

// PerfData is clusterloader2's measurement format, which perfdash and other scalability tooling read.
type PerfData struct {
	Version   string            `json:"version"`
	DataItems []DataItem        `json:"dataItems"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// DataItem is one measured distribution.
type DataItem struct {
	// Data holds Perc50, Perc90 and Perc99.
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels,omitempty"`
}

// PerfData returns the report's latencies in clusterloader2's format, in milliseconds: the reaction
// latencies (Metric=ReactionLatency), the workloads' pod startup (Measurement=PodStartupLatency,
// Metric=<transition>), scheduling throughput (Metric=SchedulingThroughput, pods/s) and reactions
// (Metric=WorkloadReaction), and the apiserver's request latencies per phase
// (Metric=APIResponsiveness, labelled as clusterloader2's own measurement labels them).
func (r *Report) PerfData() PerfData {
	pd := PerfData{Version: "v1", DataItems: []DataItem{}, Labels: map[string]string{
		"profile": r.Profile, "nodes": fmt.Sprint(r.Parameters.Nodes), "mode": r.Parameters.Mode,
	}}
	add := func(st reaction.Stats, s reaction.Summary, from string) {
		pd.DataItems = append(pd.DataItems, DataItem{
			Data: map[string]float64{"Perc50": st.P50 * 1000, "Perc90": st.P90 * 1000, "Perc99": st.P99 * 1000},
			Unit: "ms",
			Labels: map[string]string{
				"Metric": "ReactionLatency", "Phase": s.Phase, "Group": s.Group, "Op": s.Op, "Event": s.Event,
				"From": from, "Count": fmt.Sprint(st.Count),
			},
		})
	}
	for _, s := range r.Reactions {
		if s.Reacted == 0 {
			continue
		}
		add(s.FromAction, s, reaction.FromAction)
		if s.FromLastRenewal != nil {
			add(*s.FromLastRenewal, s, reaction.FromLastRenewal)
		}
	}
	if r.Capacity != nil {
		pd.DataItems = append(pd.DataItems, r.Capacity.perfData()...)
	}
	pd.DataItems = append(pd.DataItems, r.workloadPerfData()...)
	for _, ph := range r.Load.Phases {
		for _, l := range ph.Latency {
			pd.DataItems = append(pd.DataItems, DataItem{
				Data: map[string]float64{"Perc50": l.P50 * 1000, "Perc90": l.P90 * 1000, "Perc99": l.P99 * 1000},
				Unit: "ms",
				Labels: map[string]string{
					"Metric": "APIResponsiveness", "Phase": ph.Name, "Verb": l.Verb, "Resource": l.Resource,
					"Subresource": l.Subresource, "Count": fmt.Sprintf("%.0f", l.Count),
				},
			})
		}
	}
	return pd
}

// WritePerfData writes PerfData as JSON.
func (r *Report) WritePerfData(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.PerfData())
}
