package metrics

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
)

// scriptedWatch is a stream played at once to its handler: opened, some events, and ended if asked.
type scriptedWatch struct {
	events int
	ended  bool
}

func (s scriptedWatch) Watch(_ context.Context, _ agent.WatchRequest, h agent.WatchHandler) {
	h.Opened(nil)
	for range s.events {
		h.Event(agent.WatchEvent{Type: agent.EventAdded})
	}
	if s.ended {
		h.Ended(nil)
	}
}

type ignoredStream struct{}

func (ignoredStream) Opened(error)           {}
func (ignoredStream) Event(agent.WatchEvent) {}
func (ignoredStream) Ended(error)            {}

// watch counts one scripted stream of resource into t; list makes it a streaming list.
func watch(t *fleet.Tally, resource string, list bool, s scriptedWatch) {
	q := url.Values{"watch": {"true"}}
	if list {
		q.Set("sendInitialEvents", "true")
	}
	t.CountWatches(s).Watch(context.Background(), agent.WatchRequest{Resource: resource, Query: q}, ignoredStream{})
}

// The agents' watches of every fleet in the process are summed by resource: held now, lists and
// plain watches opened, events received.
func TestWatchesAreSummedOverFleets(t *testing.T) {
	a, b := fleet.NewTally(0), fleet.NewTally(0)
	watch(a, "pods", true, scriptedWatch{events: 2})
	watch(b, "pods", false, scriptedWatch{events: 1, ended: true})
	watch(b, "pods", true, scriptedWatch{})
	watch(b, "nodes", true, scriptedWatch{events: 1})
	m := New(Options{NoProcessCollectors: true})
	m.RegisterFleet(fakeFleet{"a", fleet.Progress{}, a})
	m.RegisterFleet(fakeFleet{"b", fleet.Progress{}, b})
	want := `
# HELP fakelet_watches Watch streams the fleet's agents hold open now, by resource.
# TYPE fakelet_watches gauge
fakelet_watches{resource="nodes"} 1
fakelet_watches{resource="pods"} 2
# HELP fakelet_watch_lists_total Streaming lists (sendInitialEvents) the fleet's agents opened, by resource: each reflector's first and every relist.
# TYPE fakelet_watch_lists_total counter
fakelet_watch_lists_total{resource="nodes"} 1
fakelet_watch_lists_total{resource="pods"} 2
# HELP fakelet_watch_opens_total Watches the fleet's agents opened from a resource version, by resource: a reflector resuming after the server's timeout.
# TYPE fakelet_watch_opens_total counter
fakelet_watch_opens_total{resource="nodes"} 0
fakelet_watch_opens_total{resource="pods"} 1
# HELP fakelet_watch_events_received_total Watch events the fleet's agents received, bookmarks included, by resource.
# TYPE fakelet_watch_events_received_total counter
fakelet_watch_events_received_total{resource="nodes"} 1
fakelet_watch_events_received_total{resource="pods"} 3
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "fakelet_watches",
		"fakelet_watch_lists_total", "fakelet_watch_opens_total", "fakelet_watch_events_received_total"); err != nil {
		t.Error(err)
	}
}

// A fleet in the heartbeat footprint watches nothing: no watch series at all, rather than zeros
// under made-up resources.
func TestNoWatchesNoSeries(t *testing.T) {
	m := New(Options{NoProcessCollectors: true})
	m.RegisterFleet(fakeFleet{"a", fleet.Progress{}, fleet.NewTally(0)})
	if n := len(seriesOf(t, m, "fakelet_watches")); n != 0 {
		t.Errorf("%d fakelet_watches series without watches", n)
	}
}
