package report

import (
	"time"

	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/measure/storm"
	"fakelet.dev/fakelet/measure/workload"
)

// SchemaVersion names the schema of report.json; docs/report.md documents it. A change that removes
// or redefines a field takes a new version.
const SchemaVersion = "fakelet.dev/report/v1"

// Report is everything a run measured.
type Report struct {
	Version string `json:"version"`
	// Profile is the profile's name, or "" for a run without one.
	Profile    string     `json:"profile,omitempty"`
	Parameters Parameters `json:"parameters"`
	Versions   Versions   `json:"versions"`
	Target     Target     `json:"target"`
	Start      time.Time  `json:"start"`
	End        time.Time  `json:"end"`
	// Phases are the profile's phases as they ran; a run without a profile has one phase, "run".
	Phases []reaction.Phase `json:"phases"`
	Nodes  Nodes            `json:"nodes"`
	// Reactions summarise the control plane's reactions to the profile's actions, by phase, group,
	// op and event.
	Reactions []reaction.Summary `json:"reactions,omitempty"`
	// FalseAlarms are the control plane's alarms on nodes fakelet kept healthy, by phase, group and
	// event, with what caused them (package falsealarm).
	FalseAlarms []falsealarm.Count `json:"falseAlarms,omitempty"`
	// GeneratorBound says fakelet's own send lag had a p99 above GeneratorBoundLag over the run: the
	// fleet, not the control plane, delayed the heartbeats, and the run measured fakelet.
	GeneratorBound bool `json:"generatorBound,omitempty"`
	// Storms are the stretches when kubelets fell behind together, as after a mass restart or an
	// apiserver restart, with what the fleet sent until every one was back (package storm).
	Storms []Storm `json:"storms,omitempty"`
	// StormsDropped counts the storms past storm.MaxStorms, not kept.
	StormsDropped int `json:"stormsDropped,omitempty"`
	// Workloads is what the profile's workloads did: their pods' startup latency, the scheduler's
	// throughput and their reactions to the ops that broke nodes (package workload); nil for a run
	// without workloads.
	Workloads *workload.Summary `json:"workloads,omitempty"`
	Load      Load              `json:"load"`
	// Capacity is the answer of fakelet capacity, whose phases are its steps' settles and holds; nil
	// for other runs.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Source is set when the report was built from a Prometheus server's series (fakelet report
	// --prometheus) rather than recorded by the run itself.
	Source *Source `json:"source,omitempty"`
}

// Source says where a report built after the run took its numbers from, and what it could not know.
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
	// Server is the apiserver's gitVersion.
	Server string `json:"server,omitempty"`
}

// Target is the cluster the run talked to.
type Target struct {
	Server      string `json:"server"`
	Description string `json:"description"`
	// Local says it was fakelet's local control plane.
	Local bool `json:"local"`
}

// Nodes is the fleet's nodes as the fleet's watch saw them.
type Nodes struct {
	// Timeline counts the nodes by Ready status over the run.
	Timeline []observe.StateCount `json:"timeline,omitempty"`
	// Transitions is how many changes of condition, taint and Lease were recorded.
	Transitions int `json:"transitions"`
	// LeaseRenewalsSeen counts the Lease renewals the Lease watch saw (0 when it was off).
	LeaseRenewalsSeen int64 `json:"leaseRenewalsSeen"`
}

// Load is the load on the control plane, per phase, over the whole run, and scrape by scrape.
type Load struct {
	Phases   []load.Phase  `json:"phases,omitempty"`
	Run      load.Phase    `json:"run"`
	Timeline load.Timeline `json:"timeline"`
	// ScrapeErrors are the failed scrapes, first few of each component.
	ScrapeErrors []string `json:"scrapeErrors,omitempty"`
}

// Record is what a run recorded: the input of Build.
type Record struct {
	Profile     string
	Parameters  Parameters
	Versions    Versions
	Target      Target
	Start, End  time.Time
	Phases      []reaction.Phase
	Actions     []reaction.Action
	Transitions []observe.Transition
	Snapshots   []scrape.Snapshot
	// LeaseRenewalsSeen is observe.Recorder.LeaseRenewals.
	LeaseRenewalsSeen int64
	// NodeTimeline, if set, is the node-state timeline instead of one replayed from Transitions (a
	// record read from Prometheus has counts, not transitions).
	NodeTimeline []observe.StateCount
	// ReadyTimeline, TransitionCount and Reactions, if set, are what a run kept as it went instead of
	// every transition and action (measure.Session): the timeline is sampled from ReadyTimeline, the
	// count of transitions is TransitionCount (Transitions may hold a sample of them, or none), and
	// Reactions are the reactions' summaries.
	ReadyTimeline   *observe.ReadyTimeline
	TransitionCount int
	Reactions       []reaction.Summary
	// FalseAlarms are the session's false alarms (falsealarm.Detector.Counts).
	FalseAlarms []falsealarm.Count
	// Storms are the session's storms (storm.Recorder.Storms), StormsDropped those not kept.
	Storms        []storm.Storm
	StormsDropped int
	// Workloads is the session's workloads' summary (workload.Recorder.Summary), or nil.
	Workloads *workload.Summary
	// Load, if set, is the load computed window by window elsewhere (from Prometheus, whose
	// increase() over each window is better than deltas between snapshots of the whole run), instead
	// of from Snapshots.
	Load     *Load
	Source   *Source
	Capacity *Capacity
}

// maxTimelinePoints bounds the node-state timeline: one point a second for a run of ten minutes,
// one every six seconds for an hour.
const maxTimelinePoints = 600

// scrapeErrorsListed is how many failed scrapes of each component a report names.
const scrapeErrorsListed = 3

// GeneratorBoundLag is the send lag p99 above which a run says that fakelet, not the control plane,
// was the bottleneck: the upstream SLO of a mutating API call is 1 s, and a fleet that adds as much
// to its own heartbeats measures itself.
const GeneratorBoundLag = 1.0

// GeneratorBound says whether fakelet's own send lag over p had a p99 above GeneratorBoundLag.
func GeneratorBound(p load.Phase) bool {
	return p.SendLag != nil && p.SendLag.P99 > GeneratorBoundLag
}

// Build computes the report of a recorded run.
func Build(rec Record) *Report {
	r := &Report{
		Version: SchemaVersion, Profile: rec.Profile, Parameters: rec.Parameters, Versions: rec.Versions,
		Target: rec.Target, Start: rec.Start, End: rec.End, Phases: rec.Phases, Source: rec.Source,
		Capacity: rec.Capacity,
	}
	if len(r.Phases) == 0 {
		r.Phases = []reaction.Phase{{Name: "run", Start: rec.Start, End: rec.End}}
	}
	step := max(time.Second, rec.End.Sub(rec.Start)/maxTimelinePoints).Round(time.Second)
	r.Nodes = Nodes{
		Timeline:          observe.Timeline(rec.Transitions, rec.Start, rec.End, step),
		Transitions:       len(rec.Transitions),
		LeaseRenewalsSeen: rec.LeaseRenewalsSeen,
	}
	switch {
	case rec.NodeTimeline != nil:
		r.Nodes.Timeline = rec.NodeTimeline
	case rec.ReadyTimeline != nil:
		r.Nodes.Timeline = rec.ReadyTimeline.Sample(rec.Start, rec.End, step)
	}
	r.Nodes.Transitions = max(r.Nodes.Transitions, rec.TransitionCount)
	switch {
	case rec.Reactions != nil:
		r.Reactions = rec.Reactions
	case len(rec.Actions) > 0:
		r.Reactions = reaction.SummarizeResults(reaction.Extract(rec.Actions, r.Phases, rec.Transitions), r.Phases)
	}
	r.FalseAlarms = rec.FalseAlarms
	if len(rec.Storms) > 0 {
		r.Storms = buildStorms(rec.Storms, r.Phases, rec.Snapshots)
	}
	r.StormsDropped = rec.StormsDropped
	r.Workloads = rec.Workloads
	defer func() { r.GeneratorBound = GeneratorBound(r.Load.Run) }()
	windows := make([]load.Window, len(r.Phases))
	for i, p := range r.Phases {
		windows[i] = load.Window{Name: p.Name, Start: p.Start, End: p.End}
	}
	if rec.Load != nil {
		r.Load = *rec.Load
		return r
	}
	r.Load.Phases = load.Compute(rec.Snapshots, windows)
	r.Load.Run = load.Compute(rec.Snapshots, []load.Window{{Name: "run", Start: rec.Start, End: rec.End}})[0]
	r.Load.Timeline = load.ComputeTimeline(rec.Snapshots)
	failed := map[string]int{}
	for _, s := range rec.Snapshots {
		if s.Err != "" {
			if failed[s.Component]++; failed[s.Component] <= scrapeErrorsListed {
				r.Load.ScrapeErrors = append(r.Load.ScrapeErrors, s.At.UTC().Format(time.RFC3339)+" "+s.Err)
			}
		}
	}
	return r
}
