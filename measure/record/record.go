package record

import (
	"time"

	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/workload"
)

// Record is what one run measured, the body of report.json (package report adds the schema's
// version and what it derives). The JSON names are report.json's (docs/report.md).
type Record struct {
	// Profile is the profile's name, or "" for a run without one.
	Profile    string     `json:"profile,omitempty"`
	Parameters Parameters `json:"parameters"`
	Versions   Versions   `json:"versions"`
	Target     Target     `json:"target"`
	Start      time.Time  `json:"start"`
	End        time.Time  `json:"end"`
	// Phases are the profile's phases as they ran; a run without a profile has one phase, "run"
	// (RunPhases). The session takes them from the profile runner's record, promrecord from a
	// report.json of the run or from fakelet_profile_info.
	Phases []reaction.Phase `json:"phases"`
	Nodes  Nodes            `json:"nodes"`
	// Reactions summarise the control plane's reactions to the profile's actions, by phase, group,
	// op and event, node by node: the session pairs each action with the transitions after it.
	// promrecord has none (Prometheus holds totals only: Source.Reactions).
	Reactions []reaction.Summary `json:"reactions,omitempty"`
	// FalseAlarms are the control plane's alarms on nodes fakelet kept healthy, by phase, group and
	// event, with what caused them (package falsealarm); the session's alone.
	FalseAlarms []falsealarm.Count `json:"falseAlarms,omitempty"`
	// Storms are the stretches when kubelets fell behind together, as after a mass restart or an
	// apiserver restart, with what the fleet sent until every one was back (package storm); the
	// session's alone.
	Storms []Storm `json:"storms,omitempty"`
	// StormsDropped counts the storms past storm.MaxStorms, not kept.
	StormsDropped int `json:"stormsDropped,omitempty"`
	// Workloads is what the profile's workloads did: their pods' startup latency, the scheduler's
	// throughput and their reactions to the ops that broke nodes (package workload); nil for a run
	// without workloads, and in promrecord's.
	Workloads *workload.Summary `json:"workloads,omitempty"`
	Load      Load              `json:"load"`
	// Source is set when the record was read from a Prometheus server's series (promrecord) rather
	// than recorded by the run itself.
	Source *Source `json:"source,omitempty"`
}

// Parameters are the run's settings.
type Parameters struct {
	Nodes                 int    `json:"nodes"`
	Mode                  string `json:"mode"`
	LeaseDurationSeconds  int32  `json:"leaseDurationSeconds"`
	RenewInterval         string `json:"renewInterval"`
	StatusUpdateFrequency string `json:"statusUpdateFrequency"`
	StatusReportFrequency string `json:"statusReportFrequency"`
	Identity              string `json:"identity"`
	// Footprint is which of a kubelet's requests the agents made: kubelet or heartbeat ("" in reports
	// from before the kubelet footprint, which were heartbeat).
	Footprint string `json:"footprint,omitempty"`
	// Connections is how the agents reached the apiserver: shared or per-node ("" in reports from
	// before per-node connections, which were shared); ConnectionIdentity how their requests carried
	// each node's identity: client certificate, impersonation or the fleet's credential.
	Connections        string  `json:"connections,omitempty"`
	ConnectionIdentity string  `json:"connectionIdentity,omitempty"`
	Images             int     `json:"images"`
	Zones              int     `json:"zones,omitempty"`
	RegisterQPS        float64 `json:"registerQPS"`
	Seed               int64   `json:"seed,omitempty"`
	ScrapeInterval     string  `json:"scrapeInterval"`
	// Args is the command line.
	Args []string `json:"args,omitempty"`
}

// Versions are the versions of fakelet and of what it ran against.
type Versions struct {
	Fakelet string `json:"fakelet"`
	Go      string `json:"go"`
	// Server is the apiserver's gitVersion: the session asks the server's discovery, promrecord
	// reads kubernetes_build_info.
	Server string `json:"server,omitempty"`
}

// Target is the cluster the run talked to.
type Target struct {
	Server      string `json:"server"`
	Description string `json:"description"`
	// Local says it was fakelet's local control plane.
	Local bool `json:"local"`
}

// Nodes is the fleet's nodes over the run.
type Nodes struct {
	// Timeline counts the nodes by Ready status over the run. The session samples the Ready
	// conditions its Node watch saw every TimelineStep; promrecord reads the gauge fakelet_nodes every
	// step of its own, where not Ready counts False and Unknown together (under NotReady).
	Timeline []observe.StateCount `json:"timeline,omitempty"`
	// Transitions is how many changes of condition, taint and Lease the session's watches recorded
	// (0 in promrecord's).
	Transitions int `json:"transitions"`
	// LeaseRenewalsSeen counts the Lease renewals the session's Lease watch saw (0 when it was off,
	// and in promrecord's).
	LeaseRenewalsSeen int64 `json:"leaseRenewalsSeen"`
}

// Load is the load on the control plane and the fleet, per phase, over the whole run, and step by
// step. Both producers compute each window with load.Compute over snapshots: the session over its
// own scrapes (LoadOf: the difference between the scrapes nearest each window's edges, which it
// scrapes at every phase boundary); promrecord over snapshots it makes of Prometheus's increase()
// over each window, extrapolated to the window's edges.
type Load struct {
	Phases   []load.Phase  `json:"phases,omitempty"`
	Run      load.Phase    `json:"run"`
	Timeline load.Timeline `json:"timeline"`
	// ScrapeErrors are the session's failed scrapes, first few of each component.
	ScrapeErrors []string `json:"scrapeErrors,omitempty"`
}

// Source says where a record read after the run took its numbers from, and what it could not know.
type Source struct {
	// Prometheus is the server's URL; From and To the window queried.
	Prometheus string    `json:"prometheus"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	// Step is the resolution of the timelines.
	Step string `json:"step"`
	// Phases says where the phases came from: "fakelet_profile_info", a report.json's path, or
	// "none" (one phase, "run").
	Phases string `json:"phases"`
	// Notes name what the report leaves out or estimates, in sentences.
	Notes []string `json:"notes,omitempty"`
	// Actions, Reactions and Missed are what Prometheus holds of the profile's actions and the control
	// plane's reactions: counts by phase and label, latencies estimated from histogram buckets. No
	// node is named.
	Actions   []ActionCount     `json:"actions,omitempty"`
	Reactions []ReactionLatency `json:"reactions,omitempty"`
	Missed    []MissedCount     `json:"missed,omitempty"`
}

// ActionCount is fakelet_actions_total's increase in a phase: ops applied to nodes of a group.
type ActionCount struct {
	Phase string  `json:"phase"`
	Op    string  `json:"op"`
	Group string  `json:"group"`
	Count float64 `json:"count"`
}

// ReactionLatency is fakelet_reaction_latency_seconds's increase in a phase: reactions of one event
// by nodes of a group, timed from the action or from the last renewal (From), with quantiles in
// seconds estimated from the buckets as histogram_quantile does.
type ReactionLatency struct {
	Phase string  `json:"phase"`
	Event string  `json:"event"`
	Group string  `json:"group"`
	From  string  `json:"from"`
	Count float64 `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
}

// MissedCount is fakelet_reactions_missed_total over the run: a fleet counts the reactions that
// never came only when the run ends, so they have no phase.
type MissedCount struct {
	Event string  `json:"event"`
	Group string  `json:"group"`
	Count float64 `json:"count"`
}
