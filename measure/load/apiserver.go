package load

import (
	"maps"
	"math"
	"slices"
	"sort"

	"fakelet.dev/fakelet/measure/scrape"
)

// keyLess orders request lines of equal count by verb, resource, subresource and code.
func keyLess(a, b Requests) bool {
	if a.Verb != b.Verb {
		return a.Verb < b.Verb
	}
	if a.Resource != b.Resource {
		return a.Resource < b.Resource
	}
	if a.Subresource != b.Subresource {
		return a.Subresource < b.Subresource
	}
	return a.Code < b.Code
}

// q is Quantile with 0 for an empty histogram: JSON has no NaN, and Count says it was empty.
func q(quant float64, s *scrape.Series) float64 {
	v := Quantile(quant, s.Bounds, s.Buckets)
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// latencies turns a latency histogram family into rows by its first three labels (or two), busiest
// first; with all, WATCH and CONNECT are left out and a row "*" sums the rest.
func latencies(f *scrape.Family, all bool) []Latency {
	if f == nil {
		return nil
	}
	var out []Latency
	var total *scrape.Series
	for _, s := range sortedSeries(f) {
		if s.Value <= 0 {
			continue
		}
		l := Latency{Verb: s.Labels[0], Resource: s.Labels[1], Count: s.Value, P50: q(0.5, s), P90: q(0.9, s), P99: q(0.99, s)}
		if len(s.Labels) > 2 {
			l.Subresource = s.Labels[2]
		}
		if all {
			if l.Verb == "WATCH" || l.Verb == "CONNECT" {
				continue
			}
			total = sumInto(total, s)
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	if total != nil {
		out = append([]Latency{{Verb: "*", Resource: "*", Count: total.Value, P50: q(0.5, total), P90: q(0.9, total), P99: q(0.99, total)}}, out...)
	}
	return out
}

// sumInto adds histogram s into acc (nil: a new one); series of other buckets are left out.
func sumInto(acc, s *scrape.Series) *scrape.Series {
	if acc == nil {
		return &scrape.Series{Value: s.Value, Sum: s.Sum, Bounds: s.Bounds, Buckets: append([]float64(nil), s.Buckets...)}
	}
	if len(acc.Bounds) != len(s.Bounds) {
		return acc
	}
	for i, b := range acc.Bounds {
		if s.Bounds[i] != b {
			return acc
		}
	}
	acc.Value += s.Value
	acc.Sum += s.Sum
	for i := range s.Buckets {
		acc.Buckets[i] += s.Buckets[i]
	}
	return acc
}

func bytesOf(f *scrape.Family, rate func(float64) float64) []Bytes {
	if f == nil {
		return nil
	}
	var out []Bytes
	for _, s := range sortedSeries(f) {
		if s.Value <= 0 {
			continue
		}
		b := Bytes{Verb: s.Labels[0], Resource: s.Labels[1], Count: s.Value, Bytes: s.Sum, Rate: rate(s.Sum)}
		if len(s.Labels) > 2 {
			b.Subresource = s.Labels[2]
		}
		out = append(out, b)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out
}

func priorityLevels(api []*scrape.Snapshot) []PriorityLevel {
	levels := map[string]*PriorityLevel{}
	get := func(name string) *PriorityLevel {
		if levels[name] == nil {
			levels[name] = &PriorityLevel{Name: name}
		}
		return levels[name]
	}
	if f := Delta(api, "apiserver_flowcontrol_dispatched_requests_total"); f != nil {
		for _, s := range sortedSeries(f) {
			get(s.Labels[0]).Dispatched += s.Value
		}
	}
	if f := Delta(api, "apiserver_flowcontrol_rejected_requests_total"); f != nil {
		for _, s := range sortedSeries(f) {
			get(s.Labels[0]).Rejected += s.Value
		}
	}
	if f := Delta(api, "apiserver_flowcontrol_request_wait_duration_seconds"); f != nil {
		for _, s := range sortedSeries(f) {
			if s.Labels[1] == "true" && s.Value > 0 {
				pl := get(s.Labels[0])
				pl.WaitP50, pl.WaitP99 = q(0.5, s), q(0.99, s)
			}
		}
	}
	var out []PriorityLevel
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		pl := levels[name]
		if pl.Dispatched+pl.Rejected > 0 {
			out = append(out, *pl)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Dispatched > out[j].Dispatched })
	return out
}

func watches(api []*scrape.Snapshot, rate func(float64) float64) []Watch {
	events, sizes := Delta(api, "apiserver_watch_events_total"), Delta(api, "apiserver_watch_events_sizes")
	if events == nil {
		return nil
	}
	var out []Watch
	for _, s := range sortedSeries(events) {
		key := scrape.Key(s.Labels...)
		if s.Value <= 0 {
			continue
		}
		w := Watch{Resource: s.Labels[0], Events: s.Value, EventsRate: rate(s.Value)}
		if sizes != nil && sizes.Series[key] != nil {
			w.Bytes = sizes.Series[key].Sum
			w.BytesRate = rate(w.Bytes)
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Events > out[j].Events })
	return out
}
