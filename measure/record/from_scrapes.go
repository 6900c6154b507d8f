package record

import (
	"time"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/scrape"
)

// maxTimelinePoints bounds the node-state timeline: one point a second for a run of ten minutes,
// one every six seconds for an hour.
const maxTimelinePoints = 600

// scrapeErrorsListed is how many failed scrapes of each component a record names.
const scrapeErrorsListed = 3

// TimelineStep is the step of a session's node-state timeline between start and end: a second, or
// longer so that there are at most maxTimelinePoints.
func TimelineStep(start, end time.Time) time.Duration {
	return max(time.Second, end.Sub(start)/maxTimelinePoints).Round(time.Second)
}

// RunPhases returns phases, or for a run without any its one phase, "run", from start to end.
func RunPhases(phases []reaction.Phase, start, end time.Time) []reaction.Phase {
	if len(phases) == 0 {
		return []reaction.Phase{{Name: "run", Start: start, End: end}}
	}
	return phases
}

// LoadOf is the load that a run's own scrapes snaps show in each of its phases, over the whole run
// from start to end and scrape by scrape, with its failed scrapes.
func LoadOf(snaps []scrape.Snapshot, phases []reaction.Phase, start, end time.Time) Load {
	windows := make([]load.Window, len(phases))
	for i, p := range phases {
		windows[i] = load.Window{Name: p.Name, Start: p.Start, End: p.End}
	}
	l := Load{
		Phases:   load.Compute(snaps, windows),
		Run:      load.Compute(snaps, []load.Window{{Name: "run", Start: start, End: end}})[0],
		Timeline: load.ComputeTimeline(snaps),
	}
	failed := map[string]int{}
	for _, s := range snaps {
		if s.Err != "" {
			if failed[s.Component]++; failed[s.Component] <= scrapeErrorsListed {
				l.ScrapeErrors = append(l.ScrapeErrors, s.At.UTC().Format(time.RFC3339)+" "+s.Err)
			}
		}
	}
	return l
}
