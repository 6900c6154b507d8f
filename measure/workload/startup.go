package workload

import (
	"slices"
	"time"

	"fakelet.dev/fakelet/measure/reaction"
)

// The transitions of pod startup, named as clusterloader2's PodStartupLatency measurement names them
// (clusterloader2/pkg/measurement/common/slos/pod_startup_latency.go).
const (
	CreateToSchedule = "create_to_schedule"
	ScheduleToRun    = "schedule_to_run"
	RunToWatch       = "run_to_watch"
	ScheduleToWatch  = "schedule_to_watch"
	PodStartup       = "pod_startup"
)

// Transitions lists them in the order a report shows them.
var Transitions = []string{CreateToSchedule, ScheduleToRun, RunToWatch, ScheduleToWatch, PodStartup}

// Startup is one pod's startup, each transition in seconds.
type Startup struct {
	CreateToSchedule, ScheduleToRun, RunToWatch, ScheduleToWatch, PodStartup float64
}

func (s Startup) of(name string) float64 {
	switch name {
	case CreateToSchedule:
		return s.CreateToSchedule
	case ScheduleToRun:
		return s.ScheduleToRun
	case RunToWatch:
		return s.RunToWatch
	case ScheduleToWatch:
		return s.ScheduleToWatch
	}
	return s.PodStartup
}

// startup is the pod's startup, from four points: created (its creationTimestamp, as the SLI starts
// it), scheduled (the first arrival with spec.nodeName), run (its containers' latest startedAt, the
// kubelet's report, else the arrival in Running) and watch (the first arrival in Running). The API's
// timestamps have a resolution of a second, so a transition that starts or ends at one is exact to
// a second, and a negative one (a second truncated) counts as 0.
func (p *podState) startup() (Startup, bool) {
	if p.scheduled.IsZero() || p.running.IsZero() {
		return Startup{}, false
	}
	created, run := p.created, p.started
	if created.IsZero() {
		created = p.firstSeen
	}
	if run.IsZero() {
		run = p.running
	}
	sec := func(from, to time.Time) float64 { return max(0, to.Sub(from).Seconds()) }
	return Startup{
		CreateToSchedule: sec(created, p.scheduled),
		ScheduleToRun:    sec(p.scheduled, run),
		RunToWatch:       sec(run, p.running),
		ScheduleToWatch:  sec(p.scheduled, p.running),
		PodStartup:       sec(created, p.running),
	}, true
}

// StartupLatency is the pods' startup latency, each transition's quantiles in seconds.
type StartupLatency struct {
	// Pods counts the pods measured; Excluded those left out (created before the watch, or whose
	// image pull the runtime delays).
	Pods     int                       `json:"pods"`
	Excluded int                       `json:"excluded,omitempty"`
	Latency  map[string]reaction.Stats `json:"latency,omitempty"`
}

// Throughput is how fast the scheduler placed the workloads' pods in one phase: pods first seen
// bound to a node, per second, over the seconds from the phase's first such pod to its last.
type Throughput struct {
	Phase     string  `json:"phase"`
	Scheduled int     `json:"scheduled"`
	Perc50    float64 `json:"perc50"`
	Perc90    float64 `json:"perc90"`
	Perc99    float64 `json:"perc99"`
	Max       float64 `json:"max"`
}

// startupLatency summarises the startups of pods. r.mu must be held.
func (r *Recorder) startupLatency() StartupLatency {
	var out StartupLatency
	samples := map[string][]float64{}
	for _, uid := range r.order {
		p := r.pods[uid]
		s, ok := p.startup()
		if !ok {
			continue
		}
		if p.excluded {
			out.Excluded++
			continue
		}
		out.Pods++
		for _, t := range Transitions {
			samples[t] = append(samples[t], s.of(t))
		}
	}
	if out.Pods > 0 {
		out.Latency = map[string]reaction.Stats{}
		for _, t := range Transitions {
			out.Latency[t] = reaction.Summarize(samples[t])
		}
	}
	return out
}

// throughput is the scheduling throughput of each phase in which pods were scheduled. r.mu must be
// held.
func (r *Recorder) throughput(phases []reaction.Phase) []Throughput {
	var out []Throughput
	for _, ph := range phases {
		var secs []int64
		for _, uid := range r.order {
			p := r.pods[uid]
			if s := p.scheduled; !p.old && !s.IsZero() && !s.Before(ph.Start) && s.Before(ph.End) {
				secs = append(secs, int64(p.scheduled.Sub(ph.Start)/time.Second))
			}
		}
		if len(secs) == 0 {
			continue
		}
		slices.Sort(secs)
		first, last := secs[0], secs[len(secs)-1]
		counts := make([]float64, last-first+1)
		for _, s := range secs {
			counts[s-first]++
		}
		st := reaction.Summarize(counts)
		out = append(out, Throughput{Phase: ph.Name, Scheduled: len(secs), Perc50: st.P50, Perc90: st.P90, Perc99: st.P99, Max: st.Max})
	}
	return out
}
