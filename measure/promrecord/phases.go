package promrecord

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
)

// phaseStep is the resolution at which the phase info series are read: fine enough to see every
// scrape of a phase; the phase's start comes from fakelet_profile_phase_start_time_seconds.
func phaseStep(from, to time.Time) time.Duration {
	return max(time.Second, to.Sub(from)/10000)
}

// phases derives the run's phases from the fleet's fakelet_profile_info (which phase of which
// profile each fakelet process runs) and fakelet_profile_phase_start_time_seconds (when it began
// there). A phase begins at the earliest start any process reported for it, and ends where the next
// begins; the last ends when the last process stopped reporting it, or at the window's end. A phase
// no scrape saw (shorter than the scrape interval) is not found. No info series: no phases.
func (r *reader) phases(ctx context.Context) (string, []reaction.Phase, error) {
	step := phaseStep(r.opts.From, r.opts.To)
	job := r.opts.Jobs.Fakelet
	info, err := r.series(ctx, fmt.Sprintf("fakelet_profile_info{job=%q}", job), step)
	if err != nil {
		return "", nil, err
	}
	starts, err := r.series(ctx, fmt.Sprintf("fakelet_profile_phase_start_time_seconds{job=%q}", job), step)
	if err != nil {
		return "", nil, err
	}
	// A process is its series' labels but the metric name (job and instance, and any a relabeling added).
	startAt := map[model.Fingerprint]map[model.Time]float64{}
	for _, s := range starts {
		m := s.Metric.Clone()
		delete(m, model.MetricNameLabel)
		byTime := map[model.Time]float64{}
		for _, p := range s.Values {
			byTime[p.Timestamp] = float64(p.Value)
		}
		startAt[m.Fingerprint()] = byTime
	}
	type seen struct {
		profile, name string
		start, last   time.Time
	}
	var found []*seen
	for _, s := range info {
		m := s.Metric.Clone()
		profile, name := string(m["profile"]), string(m["phase"])
		for _, l := range []model.LabelName{model.MetricNameLabel, "profile", "phase"} {
			delete(m, l)
		}
		i := slices.IndexFunc(found, func(f *seen) bool { return f.profile == profile && f.name == name })
		if i < 0 {
			found = append(found, &seen{profile: profile, name: name})
			i = len(found) - 1
		}
		f := found[i]
		for _, p := range s.Values {
			at := p.Timestamp.Time().UTC()
			if v, ok := startAt[m.Fingerprint()][p.Timestamp]; ok && !math.IsNaN(v) {
				at = time.UnixMilli(int64(math.Round(v * 1000))).UTC() // the gauge has ms precision
			}
			if f.start.IsZero() || at.Before(f.start) {
				f.start = at
			}
			if t := p.Timestamp.Time().UTC(); t.After(f.last) {
				f.last = t
			}
		}
	}
	if len(found) == 0 {
		return "", nil, nil
	}
	slices.SortFunc(found, func(a, b *seen) int { return a.start.Compare(b.start) })
	for _, f := range found[1:] {
		if f.profile != found[0].profile {
			return "", nil, fmt.Errorf("Prometheus at %s has phases of two profiles between --from and --to (%s and %s): narrow the window to one run, or give its phases with --phases-from",
				r.opts.URL, found[0].profile, f.profile)
		}
	}
	var phases []reaction.Phase
	for i, f := range found {
		end := f.last
		if i+1 < len(found) {
			end = found[i+1].start
		}
		phases = append(phases, reaction.Phase{Name: f.name, Start: f.start, End: end})
	}
	return found[0].profile, clip(phases, r.opts.From, r.opts.To), nil
}

// clip bounds phases to the window, leaving out those outside it.
func clip(phases []reaction.Phase, from, to time.Time) []reaction.Phase {
	var out []reaction.Phase
	for _, p := range phases {
		if p.Start.Before(from) {
			p.Start = from
		}
		if p.End.After(to) || p.End.IsZero() {
			p.End = to
		}
		if p.End.After(p.Start) {
			out = append(out, p)
		}
	}
	return out
}

// nodeTimeline is the fleet's node states over the window, summed over its processes.
func (r *reader) nodeTimeline(ctx context.Context) ([]observe.StateCount, error) {
	m, err := r.series(ctx, fmt.Sprintf("sum by (state) (fakelet_nodes{job=%q})", r.opts.Jobs.Fakelet), r.opts.Step)
	if err != nil {
		return nil, err
	}
	byTime := map[model.Time]*observe.StateCount{}
	var times []model.Time
	for _, s := range m {
		state := string(s.Metric["state"])
		if state != "ready" && state != "not_ready" {
			continue
		}
		for _, p := range s.Values {
			c := byTime[p.Timestamp]
			if c == nil {
				c = &observe.StateCount{At: p.Timestamp.Time().UTC()}
				byTime[p.Timestamp] = c
				times = append(times, p.Timestamp)
			}
			if state == "ready" {
				c.Ready = int(p.Value)
			} else {
				c.NotReady = int(p.Value)
			}
		}
	}
	slices.Sort(times)
	out := make([]observe.StateCount, 0, len(times))
	for _, t := range times {
		out = append(out, *byTime[t])
	}
	return out, nil
}

// fleetNodes is the most nodes the fleet's processes ran at once, summed over them.
func (r *reader) fleetNodes(ctx context.Context) (int, error) {
	m, err := r.series(ctx, fmt.Sprintf("sum by () (fakelet_fleet_nodes{job=%q})", r.opts.Jobs.Fakelet), r.opts.Step)
	if err != nil {
		return 0, err
	}
	most := 0
	for _, s := range m {
		for _, p := range s.Values {
			most = max(most, int(p.Value))
		}
	}
	return most, nil
}
