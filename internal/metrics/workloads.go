package metrics

import "github.com/prometheus/client_golang/prometheus"

// workloadMetrics are the profile's workloads': their pods' startup, observed live, and their
// reactions to the ops that broke nodes, set when the run ends (the reactions are known only then).
type workloadMetrics struct {
	startup   *prometheus.HistogramVec
	reactions *prometheus.GaugeVec
	lost      *prometheus.GaugeVec
}

// PodStartupBuckets are the upper bounds of the pod startup histogram, in seconds: the SLO is 5 s at
// p99, and a pod waiting on an outage takes minutes.
var PodStartupBuckets = []float64{0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120, 300}

func newWorkloadMetrics() workloadMetrics {
	return workloadMetrics{
		startup: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "pod_startup_latency_seconds",
			Help:    "The workloads' pod startup, by transition as clusterloader2's PodStartupLatency names them (create_to_schedule, schedule_to_run, run_to_watch, schedule_to_watch, pod_startup).",
			Buckets: PodStartupBuckets,
		}, []string{"transition"}),
		reactions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "workload_reaction_seconds",
			Help: "Time from an op that broke nodes to each step of the workloads' reaction, the first, median and last of the pods (stat), by op, group and step; set when the run ends.",
		}, []string{"op", "group", "step", "stat"}),
		lost: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "workload_pods_lost",
			Help: "The workloads' pods an op that broke nodes lost for good (neither Ready again nor replaced by a Ready pod by the run's end), by op and group; set when the run ends.",
		}, []string{"op", "group"}),
	}
}

func (w workloadMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{w.startup, w.reactions, w.lost}
}

// ObservePodStartup records one pod's startup transition (seconds).
func (m *Metrics) ObservePodStartup(transition string, seconds float64) {
	m.workloads.startup.WithLabelValues(transition).Observe(seconds)
}

// SetWorkloadReaction sets one step of the workloads' reaction to op on group: its first, median and
// last, in seconds.
func (m *Metrics) SetWorkloadReaction(op, group, step string, first, median, last float64) {
	m.workloads.reactions.WithLabelValues(op, group, step, "first").Set(first)
	m.workloads.reactions.WithLabelValues(op, group, step, "median").Set(median)
	m.workloads.reactions.WithLabelValues(op, group, step, "last").Set(last)
}

// SetWorkloadPodsLost sets the pods op on group lost for good.
func (m *Metrics) SetWorkloadPodsLost(op, group string, pods int) {
	m.workloads.lost.WithLabelValues(op, group).Set(float64(pods))
}
