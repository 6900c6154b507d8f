package load

import (
	"math"
	"slices"
	"sort"
	"time"

	"fakelet.dev/fakelet/measure/scrape"
)

// Increase is how much a counter grew over values taken in order of time: the sum of the differences
// between consecutive values, where a value lower than the one before is a reset and counts whole
// (the counter restarted from zero and reached it), as Prometheus's increase() does.
func Increase(values []float64) float64 {
	var inc float64
	for i := 1; i < len(values); i++ {
		inc += step(values[i-1], values[i])
	}
	return inc
}

// step is the increase from prev to cur, counting a drop as a reset.
func step(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// component picks the successful snapshots of one component, in order of time.
func component(snaps []scrape.Snapshot, name string) []*scrape.Snapshot {
	var out []*scrape.Snapshot
	for i := range snaps {
		if s := &snaps[i]; s.Component == name && s.Err == "" {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// window returns the snapshots from the one nearest start to the one nearest end: the scrapes at a
// phase's boundaries, taken a moment after them.
func window(snaps []*scrape.Snapshot, start, end time.Time) []*scrape.Snapshot {
	if len(snaps) == 0 {
		return nil
	}
	i, j := nearest(snaps, start), nearest(snaps, end)
	if j < i {
		return nil
	}
	return snaps[i : j+1]
}

func nearest(snaps []*scrape.Snapshot, t time.Time) int {
	best, bestD := 0, time.Duration(math.MaxInt64)
	for i, s := range snaps {
		d := s.At.Sub(t)
		if d < 0 {
			d = -d
		}
		if d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// Delta is the increase of every series of a counter or histogram family over consecutive snapshots
// of one component; a series that appears after the first snapshot counts from zero.
func Delta(snaps []*scrape.Snapshot, name string) *scrape.Family {
	var out *scrape.Family
	for i := 1; i < len(snaps); i++ {
		cur := snaps[i].Families[name]
		if cur == nil {
			continue
		}
		if out == nil {
			out = &scrape.Family{Type: cur.Type, Labels: cur.Labels, Series: map[string]*scrape.Series{}}
		}
		prev := snaps[i-1].Families[name]
		for key, c := range cur.Series {
			var p *scrape.Series
			if prev != nil {
				p = prev.Series[key]
			}
			acc := out.Series[key]
			if acc == nil {
				acc = &scrape.Series{Labels: c.Labels, Bounds: c.Bounds}
				if c.Bounds != nil {
					acc.Buckets = make([]float64, len(c.Bounds))
				}
				out.Series[key] = acc
			}
			addStep(acc, p, c)
		}
	}
	return out
}

// addStep adds the increase from p (nil: zero) to c into acc. A new series, a reset (the count
// dropped) or changed buckets count c whole, from zero.
func addStep(acc, p, c *scrape.Series) {
	if c.Bounds != nil && !slices.Equal(acc.Bounds, c.Bounds) {
		return // buckets differ from the phase's first: not comparable, left out
	}
	if p == nil || c.Value < p.Value || !slices.Equal(p.Bounds, c.Bounds) {
		acc.Value += c.Value
		acc.Sum += c.Sum
		for i := range c.Buckets {
			acc.Buckets[i] += c.Buckets[i]
		}
		return
	}
	acc.Value += c.Value - p.Value
	acc.Sum += c.Sum - p.Sum
	for i := range c.Buckets {
		acc.Buckets[i] += step(p.Buckets[i], c.Buckets[i])
	}
}

// Quantile estimates the q-quantile (0 <= q <= 1) of a histogram from its cumulative buckets, as
// Prometheus's histogram_quantile does: linear interpolation inside the bucket where the rank falls,
// the lowest bucket starting at 0, and the highest finite bound for a rank in the +Inf bucket. NaN
// for an empty histogram.
func Quantile(q float64, bounds, cumulative []float64) float64 {
	n := len(cumulative)
	if n == 0 || cumulative[n-1] <= 0 || len(bounds) != n {
		return math.NaN()
	}
	rank := q * cumulative[n-1]
	b := sort.Search(n, func(i int) bool { return cumulative[i] >= rank })
	if b >= n {
		b = n - 1
	}
	if math.IsInf(bounds[b], 1) {
		if b == 0 {
			return math.NaN()
		}
		return bounds[b-1]
	}
	lower, below := 0.0, 0.0
	if b > 0 {
		lower, below = bounds[b-1], cumulative[b-1]
	} else if bounds[0] <= 0 {
		return bounds[0]
	}
	inBucket := cumulative[b] - below
	if inBucket == 0 {
		return bounds[b]
	}
	return lower + (bounds[b]-lower)*(rank-below)/inBucket
}

// Rejected is the increase of apiserver_flowcontrol_rejected_requests_total, over every priority
// level, between the last apiserver scrape at or before start and the first at or after end: the
// scrapes around a stretch shorter than the scrape interval. It also returns the two scrapes' times;
// ok is false without two such scrapes.
func Rejected(snaps []scrape.Snapshot, start, end time.Time) (rejected float64, from, to time.Time, ok bool) {
	api := component(snaps, APIServer)
	i := sort.Search(len(api), func(k int) bool { return api[k].At.After(start) }) - 1
	j := sort.Search(len(api), func(k int) bool { return !api[k].At.Before(end) })
	if i < 0 || j >= len(api) || j <= i {
		return 0, time.Time{}, time.Time{}, false
	}
	if f := Delta(api[i:j+1], "apiserver_flowcontrol_rejected_requests_total"); f != nil {
		for _, s := range f.Series {
			rejected += s.Value
		}
	}
	return rejected, api[i].At, api[j].At, true
}
