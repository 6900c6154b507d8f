package scrape

import (
	"context"
	"math"
	"sync"

	"fakelet.dev/fakelet/fleet"
)

// Families of the fleet's own view of its requests, as FleetSource reports them. The duration and
// byte families are fakelet's Prometheus metrics of the same names (docs/metrics.md) summed over the
// code; the request count family is by result instead.
const (
	FleetRequests        = "fakelet_requests_total"
	FleetRequestDuration = "fakelet_request_duration_seconds"
	FleetRequestBytes    = "fakelet_request_bytes_total"
	FleetResponseBytes   = "fakelet_response_bytes_total"
	// FleetSendLag is fakelet's own delay in sending its heartbeats (fleet.Tally.SendLag).
	FleetSendLag = "fakelet_heartbeat_send_lag_seconds"
	// The agents' watches by resource (fleet.Tally.Watches): held now, streaming lists and plain
	// watches opened, events received.
	FleetWatchesHeld = "fakelet_watches"
	FleetWatchLists  = "fakelet_watch_lists_total"
	FleetWatchOpens  = "fakelet_watch_opens_total"
	FleetWatchEvents = "fakelet_watch_events_received_total"
)

// FleetComponent is the component name of the fleet's own snapshots.
const FleetComponent = "fakelet"

// FleetSource reports what fleets' agents sent, read from their tallies (fleet.Tally, the one record
// on the heartbeat path, which fakelet's metrics read too): requests by verb, resource and result
// (ok, or error for what a kubelet counts as a failure), with their latencies and body bytes.
type FleetSource struct {
	mu      sync.Mutex
	tallies []*fleet.Tally
}

// Add makes the source report t too; the tallies of several fleets are summed.
func (f *FleetSource) Add(t *fleet.Tally) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tallies = append(f.tallies, t)
}

// Component implements Source.
func (f *FleetSource) Component() string { return FleetComponent }

// Scrape implements Source.
func (f *FleetSource) Scrape(context.Context) (map[string]*Family, error) {
	family := func(name string) *Family {
		return &Family{Type: Selection[name].Type, Labels: Selection[name].Labels, Series: map[string]*Series{}}
	}
	reqs, dur := family(FleetRequests), family(FleetRequestDuration)
	sent, received := family(FleetRequestBytes), family(FleetResponseBytes)
	lag := family(FleetSendLag)
	held, lists, opens, events := family(FleetWatchesHeld), family(FleetWatchLists), family(FleetWatchOpens), family(FleetWatchEvents)
	add := func(fam *Family, v float64, labels ...string) *Series {
		k := Key(labels...)
		s := fam.Series[k]
		if s == nil {
			s = &Series{Labels: labels}
			fam.Series[k] = s
		}
		s.Value += v
		return s
	}
	f.mu.Lock()
	tallies := append([]*fleet.Tally(nil), f.tallies...)
	f.mu.Unlock()
	for _, t := range tallies {
		for _, r := range t.Series() {
			if ok := r.Count - r.Failed; ok > 0 {
				add(reqs, float64(ok), r.Verb, r.Resource, "ok")
			}
			if r.Failed > 0 {
				add(reqs, float64(r.Failed), r.Verb, r.Resource, "error")
			}
			add(sent, float64(r.RequestBytes), r.Verb, r.Resource)
			add(received, float64(r.ResponseBytes), r.Verb, r.Resource)
			s := add(dur, float64(r.Latency.Count), r.Verb, r.Resource)
			s.Sum += r.Latency.Sum
			if s.Bounds == nil {
				s.Bounds = append(append([]float64(nil), r.Latency.Bounds...), math.Inf(1))
				s.Buckets = make([]float64, len(s.Bounds))
			}
			for i, c := range r.Latency.Cumulative {
				s.Buckets[i] += float64(c)
			}
			s.Buckets[len(s.Buckets)-1] += float64(r.Latency.Count)
		}
		addHistogram(add(lag, 0), t.SendLag())
		for _, w := range t.Watches() {
			add(held, float64(w.Held), w.Resource)
			add(lists, float64(w.Lists), w.Resource)
			add(opens, float64(w.Watches), w.Resource)
			add(events, float64(w.Events), w.Resource)
		}
	}
	return map[string]*Family{FleetRequests: reqs, FleetRequestDuration: dur, FleetRequestBytes: sent, FleetResponseBytes: received,
		FleetSendLag: lag, FleetWatchesHeld: held, FleetWatchLists: lists, FleetWatchOpens: opens, FleetWatchEvents: events}, nil
}

// addHistogram adds h into s.
func addHistogram(s *Series, h fleet.Histogram) {
	s.Value += float64(h.Count)
	s.Sum += h.Sum
	if s.Bounds == nil {
		s.Bounds = append(append([]float64(nil), h.Bounds...), math.Inf(1))
		s.Buckets = make([]float64, len(s.Bounds))
	}
	for i, c := range h.Cumulative {
		s.Buckets[i] += float64(c)
	}
	s.Buckets[len(s.Buckets)-1] += float64(h.Count)
}
