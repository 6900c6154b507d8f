package promrecord

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
)

// lookback is how far back Prometheus looks for an instant selector's latest sample.
const lookback = 5 * time.Minute

// reactions reads what Prometheus holds of a profile's actions and of the control plane's reactions:
// fakelet_actions_total and fakelet_reaction_latency_seconds by phase, fakelet_reactions_missed_total
// over the run (a fleet counts those only as the run ends). These series begin with a fleet's first
// action or reaction, mid-run, where increase() would not count their first sample; and they only
// grow while a process runs. So a phase's count is, per process, the latest value at its end (within
// the lookback, also if the process has exited) less the value at its start, summed over the
// processes. A process that restarted within a phase would count its counts before the restart only.
func (r *reader) reactions(ctx context.Context, phases []reaction.Phase) ([]record.ActionCount, []record.ReactionLatency, []record.MissedCount, error) {
	job := r.opts.Jobs.Fakelet
	var actions []record.ActionCount
	var latencies []record.ReactionLatency
	for _, p := range phases {
		counts, err := r.during(ctx, fmt.Sprintf("fakelet_actions_total{job=%q}", job), []string{"op", "group"}, p)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, c := range counts {
			if c.value <= 0 {
				continue
			}
			actions = append(actions, record.ActionCount{Phase: p.Name, Op: c.labels[0], Group: c.labels[1], Count: c.value})
		}
		buckets, err := r.during(ctx, fmt.Sprintf("fakelet_reaction_latency_seconds_bucket{job=%q}", job), []string{"event", "group", "from", "le"}, p)
		if err != nil {
			return nil, nil, nil, err
		}
		latencies = append(latencies, latencyRows(p.Name, buckets)...)
	}
	run := reaction.Phase{Name: "run", Start: r.opts.From, End: r.opts.To}
	misses, err := r.during(ctx, fmt.Sprintf("fakelet_reactions_missed_total{job=%q}", job), []string{"event", "group"}, run)
	if err != nil {
		return nil, nil, nil, err
	}
	var missed []record.MissedCount
	for _, m := range misses {
		if m.value <= 0 {
			continue
		}
		missed = append(missed, record.MissedCount{Event: m.labels[0], Group: m.labels[1], Count: m.value})
	}
	return actions, latencies, missed, nil
}

type count struct {
	labels []string
	value  float64
}

// during is how much a counter that only grows rose during p, by labels, summed over processes, in
// order of labels.
func (r *reader) during(ctx context.Context, selector string, by []string, p reaction.Phase) ([]count, error) {
	window := p.End.Sub(p.Start) + lookback
	end, err := r.instant(ctx, sumBy(by, fmt.Sprintf("max_over_time(%s[%dms])", selector, window.Milliseconds())), p.End)
	if err != nil {
		return nil, err
	}
	start, err := r.instant(ctx, sumBy(by, selector), p.Start)
	if err != nil {
		return nil, err
	}
	before := map[string]float64{}
	key := func(m model.Metric) []string {
		values := make([]string, len(by))
		for i, l := range by {
			values[i] = string(m[model.LabelName(l)])
		}
		return values
	}
	for _, s := range start {
		before[strings.Join(key(s.Metric), "\x00")] = float64(s.Value)
	}
	var out []count
	for _, s := range end {
		k := key(s.Metric)
		out = append(out, count{k, max(0, float64(s.Value)-before[strings.Join(k, "\x00")])})
	}
	slices.SortFunc(out, func(a, b count) int { return slices.Compare(a.labels, b.labels) })
	return out, nil
}

// latencyRows turns the rise of each bucket (labels event, group, from, le) into a row per event,
// group and from.
func latencyRows(phase string, buckets []count) []record.ReactionLatency {
	type hist struct {
		bounds, cumulative []float64
	}
	byKey := map[[3]string]*hist{}
	var keys [][3]string
	for _, b := range buckets {
		k := [3]string{b.labels[0], b.labels[1], b.labels[2]}
		le, err := strconv.ParseFloat(b.labels[3], 64)
		if err != nil {
			continue
		}
		h := byKey[k]
		if h == nil {
			h = &hist{}
			byKey[k] = h
			keys = append(keys, k)
		}
		h.bounds, h.cumulative = append(h.bounds, le), append(h.cumulative, b.value)
	}
	var out []record.ReactionLatency
	for _, k := range keys {
		h := byKey[k]
		order := make([]int, len(h.bounds))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmpFloat(h.bounds[a], h.bounds[b]) })
		bounds, cum := make([]float64, len(order)), make([]float64, len(order))
		for i, j := range order {
			bounds[i], cum[i] = h.bounds[j], h.cumulative[j]
		}
		// Buckets are cumulative; a process's bucket missing at the start cannot make one shrink.
		for i := 1; i < len(cum); i++ {
			cum[i] = max(cum[i], cum[i-1])
		}
		if len(bounds) == 0 || !math.IsInf(bounds[len(bounds)-1], 1) || cum[len(cum)-1] <= 0 {
			continue
		}
		q := func(x float64) float64 {
			if v := load.Quantile(x, bounds, cum); !math.IsNaN(v) {
				return v
			}
			return 0
		}
		out = append(out, record.ReactionLatency{Phase: phase, Event: k[0], Group: k[1], From: k[2],
			Count: cum[len(cum)-1], P50: q(0.5), P90: q(0.9), P99: q(0.99)})
	}
	return out
}
