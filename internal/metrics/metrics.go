// Package metrics holds fakelet's Prometheus metrics, on a registry of their own: what the fleet's
// agents send and how long it takes, how the fleet's nodes stand, how closely lease renewals keep
// the kubelet's timing, which profile phase runs and what it applied, and how fast the control plane
// reacted. Every name is documented in docs/metrics.md.
//
// Cardinality is bounded whatever the fleet's size: no label names a node. Labels hold verbs,
// resources, HTTP codes, heartbeat kinds, node states, and the names of a profile's phases, groups,
// ops and reaction events.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/utils/clock"
)

// namespace prefixes every metric of fakelet's own.
const namespace = "fakelet"

// Options configure New. The zero value takes the kubelet's defaults.
type Options struct {
	// Clock is the clock of the phase start time; nil: the real clock.
	Clock clock.PassiveClock
	// NoProcessCollectors leaves out the go_* and process_* collectors (tests that compare a whole
	// exposition).
	NoProcessCollectors bool
}

// Metrics is fakelet's metrics registry and the metrics on it. Its methods are safe for concurrent
// use.
type Metrics struct {
	reg   *prometheus.Registry
	clock clock.PassiveClock

	profileInfo    *prometheus.GaugeVec
	phaseStart     prometheus.Gauge
	actions        *prometheus.CounterVec
	reactions      *prometheus.HistogramVec
	reactionMisses *prometheus.CounterVec
	fleets         *fleetCollector
	workloads      workloadMetrics

	phaseMu sync.Mutex // orders SetPhase's reset and set
}

// Reaction latency references: what a reaction latency is measured from.
const (
	// FromAction measures from the moment the action took effect on the node.
	FromAction = "action"
	// FromLastRenewal measures from the node's last successful lease renewal before the action:
	// what the node lifecycle controller's grace period counts from.
	FromLastRenewal = "last_renewal"
)

// New returns fakelet's metrics on a new registry, with the Go runtime and process collectors.
func New(opts Options) *Metrics {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		clock: opts.Clock,
		profileInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "profile_info",
			Help: "The profile and phase running now: always 1, one series at a time.",
		}, []string{"profile", "phase"}),
		phaseStart: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "profile_phase_start_time_seconds",
			Help: "Unix time at which the current profile phase started.",
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "actions_total",
			Help: "Profile ops applied to nodes, by op and group: one per node and op.",
		}, []string{"op", "group"}),
		reactions: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "reaction_latency_seconds",
			Help:    "Time from an action (from=\"action\") or from the node's last lease renewal before it (from=\"last_renewal\") to the control plane's reaction, by reaction event and group.",
			Buckets: ReactionBuckets,
		}, []string{"event", "group", "from"}),
		reactionMisses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "reactions_missed_total",
			Help: "Expected reactions that did not come within their phase, by reaction event and group.",
		}, []string{"event", "group"}),
		fleets:    newFleetCollector(),
		workloads: newWorkloadMetrics(),
	}
	m.reg.MustRegister(m.profileInfo, m.phaseStart, m.actions, m.reactions, m.reactionMisses, m.fleets)
	m.reg.MustRegister(m.workloads.collectors()...)
	if !opts.NoProcessCollectors {
		m.reg.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}
	return m
}

// Registry is the registry all of fakelet's metrics are on. Register more collectors here.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats, with promhttp's own request
// counters. A collector that fails does not fail the scrape: its error is logged in the response
// and the rest is served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4, // one Prometheus, maybe a person with curl
	}))
}

// SetPhase records that phase of profile runs from now: fakelet_profile_info{profile, phase} is 1
// and no other series of it remains, and the phase start time is now. The profile runner calls it
// at each phase boundary.
func (m *Metrics) SetPhase(profile, phase string) {
	m.phaseMu.Lock()
	defer m.phaseMu.Unlock()
	m.profileInfo.Reset()
	m.profileInfo.WithLabelValues(profile, phase).Set(1)
	m.phaseStart.Set(float64(m.clock.Now().UnixNano()) / 1e9)
}

// ActionApplied counts one op (profiles.Op, such as "stop") applied to one node of group.
func (m *Metrics) ActionApplied(op, group string) {
	m.actions.WithLabelValues(op, group).Inc()
}

// ObserveReaction records one reaction of the control plane to an action on a node of group: event
// names the reaction (for example "ready_unknown" or "taint_unreachable_noexecute_added"), from is
// FromAction or FromLastRenewal, latency the time between the two.
func (m *Metrics) ObserveReaction(event, group, from string, latency time.Duration) {
	m.reactions.WithLabelValues(event, group, from).Observe(latency.Seconds())
}

// ReactionMissed counts an expected reaction that did not come within its phase.
func (m *Metrics) ReactionMissed(event, group string) {
	m.reactionMisses.WithLabelValues(event, group).Inc()
}

// ReactionBuckets are the upper bounds of the reaction latency histogram, in seconds: fine below a
// second (taints follow a condition change in milliseconds), every 5 s around the node lifecycle
// controller's grace periods (20-60 s), then up to the 300 s of the default toleration for eviction.
var ReactionBuckets = []float64{
	0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 70, 80, 90,
	120, 180, 240, 300, 330, 360, 480, 600,
}
