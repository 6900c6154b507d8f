package promrecord

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
)

// timelineFamilies are what load.ComputeTimeline reads, by component.
var timelineFamilies = map[string][]string{
	load.APIServer: {"apiserver_request_total", "apiserver_request_duration_seconds"},
	load.Etcd:      {"etcd_disk_wal_write_bytes_total"},
}

// query is one family of one component to read at a time: the increase since since, or a gauge.
type query struct {
	component, family string
	since, at         time.Time
}

// load computes the load of each phase, of the whole run and of each step, each window from its own
// snapshots through package load, as a run's scrapes are: a snapshot at the window's start with
// every counter and histogram at zero, one at its end with their increase() over the window, and
// between them one every step with the gauges (memory, etcd's size, zone health) alone. Reading
// each window's increase over that window, rather than differences of increases since the run's
// start, keeps Prometheus's extrapolation to the window's own rate: a run's first seconds, while
// the nodes register, do not bend its later phases.
//
// increase() needs two samples in its window: a window shorter than a step (which holds two
// scrapes) is read over the step around its middle, within the run, and scaled to its length.
func (r *reader) load(ctx context.Context, phases []reaction.Phase) (record.Load, error) {
	from, to, step := r.opts.From, r.opts.To, r.opts.Step
	windows := []load.Window{{Name: "run", Start: from, End: to}}
	for _, p := range phases {
		windows = append(windows, load.Window{Name: p.Name, Start: p.Start, End: p.End})
	}
	var steps []time.Time
	for t := from; !t.After(to); t = t.Add(step) {
		steps = append(steps, t)
	}
	// Gauges at every step and every window's edges.
	gaugeAt := slices.Clone(steps)
	for _, w := range windows {
		gaugeAt = append(gaugeAt, w.Start, w.End)
	}
	slices.SortFunc(gaugeAt, func(a, b time.Time) int { return a.Compare(b) })
	gaugeAt = slices.CompactFunc(gaugeAt, func(a, b time.Time) bool { return a.Equal(b) })
	var qs []query
	seen := map[query]bool{}
	add := func(q query) {
		if !seen[q] {
			seen[q] = true
			qs = append(qs, q)
		}
	}
	for _, c := range components {
		for _, f := range families[c] {
			if scrape.Selection[f].Type == scrape.Gauge {
				for _, t := range gaugeAt {
					add(query{c, f, time.Time{}, t})
				}
				continue
			}
			for _, w := range windows {
				read, _ := r.widen(w)
				add(query{c, f, read.Start, read.End})
			}
		}
		for _, f := range timelineFamilies[c] {
			for i := 1; i < len(steps); i++ {
				add(query{c, f, steps[i-1], steps[i]})
			}
		}
	}
	got, err := r.run(ctx, qs)
	if err != nil {
		return record.Load{}, err
	}
	// snapshot is what was read of component at t: the gauges, and the increases since since.
	snapshot := func(c string, since, t time.Time, fams []string) scrape.Snapshot {
		s := scrape.Snapshot{Component: c, At: t, Families: map[string]*scrape.Family{}}
		for _, f := range fams {
			q := query{c, f, since, t}
			if scrape.Selection[f].Type == scrape.Gauge {
				q.since = time.Time{}
			}
			if fam := got[q]; fam != nil {
				s.Families[f] = fam
			}
		}
		return s
	}
	compute := func(w load.Window) load.Phase {
		read, scale := r.widen(w)
		var snaps []scrape.Snapshot
		for _, c := range components {
			end := snapshot(c, time.Time{}, w.End, gauges(families[c]))
			for name, f := range snapshot(c, read.Start, read.End, families[c]).Families {
				if f.Type != scrape.Gauge {
					end.Families[name] = scaled(f, scale)
				}
			}
			snaps = append(snaps, zeroCounters(snapshot(c, time.Time{}, w.Start, gauges(families[c])), end))
			for _, t := range gaugeAt {
				if t.After(w.Start) && t.Before(w.End) {
					snaps = append(snaps, snapshot(c, time.Time{}, t, gauges(families[c])))
				}
			}
			snaps = append(snaps, end)
		}
		return load.Compute(snaps, []load.Window{w})[0]
	}
	l := record.Load{Run: compute(windows[0])}
	for _, w := range windows[1:] {
		l.Phases = append(l.Phases, compute(w))
	}
	for i := 1; i < len(steps); i++ {
		var pair []scrape.Snapshot
		for c, fams := range timelineFamilies {
			end := snapshot(c, steps[i-1], steps[i], fams)
			pair = append(pair, zeroCounters(scrape.Snapshot{Component: c, At: steps[i-1]}, end), end)
		}
		t := load.ComputeTimeline(pair)
		l.Timeline.RequestRate = append(l.Timeline.RequestRate, t.RequestRate...)
		l.Timeline.LatencyP99 = append(l.Timeline.LatencyP99, t.LatencyP99...)
		l.Timeline.EtcdWALRate = append(l.Timeline.EtcdWALRate, t.EtcdWALRate...)
	}
	return l, nil
}

// widen returns the window to read w's increases over, and the factor that scales them to w: w
// itself, or for a window shorter than a step the step around its middle, within the run.
func (r *reader) widen(w load.Window) (load.Window, float64) {
	length, step := w.End.Sub(w.Start), r.opts.Step
	if length >= step || length <= 0 {
		return w, 1
	}
	mid := w.Start.Add(length / 2)
	read := load.Window{Name: w.Name, Start: mid.Add(-step / 2), End: mid.Add(step / 2)}
	if read.Start.Before(r.opts.From) {
		read.Start, read.End = r.opts.From, r.opts.From.Add(step)
	}
	if read.End.After(r.opts.To) {
		read.Start, read.End = r.opts.To.Add(-step), r.opts.To
	}
	if read.Start.Before(r.opts.From) {
		return w, 1 // the run is shorter than a step
	}
	return read, length.Seconds() / step.Seconds()
}

// scaled returns f with every count and sum multiplied by k.
func scaled(f *scrape.Family, k float64) *scrape.Family {
	if k == 1 {
		return f
	}
	out := &scrape.Family{Type: f.Type, Labels: f.Labels, Series: map[string]*scrape.Series{}}
	for key, s := range f.Series {
		c := &scrape.Series{Labels: s.Labels, Value: s.Value * k, Sum: s.Sum * k, Bounds: s.Bounds}
		for _, b := range s.Buckets {
			c.Buckets = append(c.Buckets, b*k)
		}
		out.Series[key] = c
	}
	return out
}

// run sends the queries, a few at a time, and returns their answers.
func (r *reader) run(ctx context.Context, qs []query) (map[query]*scrape.Family, error) {
	results := make([]*scrape.Family, len(qs))
	errs := make([]error, len(qs))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, q := range qs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], errs[i] = r.family(ctx, q.component, q.family, q.since, q.at)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make(map[query]*scrape.Family, len(qs))
	for i, q := range qs {
		out[q] = results[i]
	}
	return out, nil
}

// zeroCounters adds to start a zero of every counter and histogram series that end has: the
// window's increase starts from it.
func zeroCounters(start, end scrape.Snapshot) scrape.Snapshot {
	if start.Families == nil {
		start.Families = map[string]*scrape.Family{}
	}
	for name, f := range end.Families {
		if f.Type == scrape.Gauge {
			continue
		}
		zero := &scrape.Family{Type: f.Type, Labels: f.Labels, Series: map[string]*scrape.Series{}}
		for k, s := range f.Series {
			z := &scrape.Series{Labels: s.Labels, Bounds: s.Bounds}
			if s.Bounds != nil {
				z.Buckets = make([]float64, len(s.Bounds))
			}
			zero.Series[k] = z
		}
		start.Families[name] = zero
	}
	return start
}

func gauges(fams []string) []string {
	var out []string
	for _, f := range fams {
		if scrape.Selection[f].Type == scrape.Gauge {
			out = append(out, f)
		}
	}
	return out
}
