package fleet

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"fakelet.dev/fakelet/agent"
)

// watchTally counts the agents' watches by resource, whatever carries them: the streams held now,
// the streaming lists opened (each reflector's first list and every relist after a 410 Gone or a
// broken stream), the plain watches opened (a reflector resuming after the server's timeout), and
// the events received. It is what a report shows of the watches' cost on the fleet's side.
type watchTally struct {
	mu         sync.Mutex
	byResource map[string]*watchCounts
}

type watchCounts struct {
	held, lists, watches, events atomic.Int64
}

// counts returns resource's counters; a stream looks them up once, not per event.
func (w *watchTally) counts(resource string) *watchCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.byResource[resource]
	if c == nil {
		if w.byResource == nil {
			w.byResource = map[string]*watchCounts{}
		}
		c = &watchCounts{}
		w.byResource[resource] = c
	}
	return c
}

// WatchSeries is the agents' watches of one resource.
type WatchSeries struct {
	Resource string
	Held     int64 // streams open now
	Lists    int64 // streaming lists opened (sendInitialEvents), relists included
	Watches  int64 // watches opened from a resource version
	Events   int64 // events received, bookmarks included
}

// Watches returns the agents' watches by resource, in order of resource.
func (t *Tally) Watches() []WatchSeries {
	w := &t.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]WatchSeries, 0, len(w.byResource))
	for r, c := range w.byResource {
		out = append(out, WatchSeries{Resource: r, Held: c.held.Load(), Lists: c.lists.Load(), Watches: c.watches.Load(), Events: c.events.Load()})
	}
	slices.SortFunc(out, func(a, b WatchSeries) int { return strings.Compare(a.Resource, b.Resource) })
	return out
}

// CountWatches returns w counting its streams into the tally, as the fleet counts its agents'
// watches (Watches).
func (t *Tally) CountWatches(w agent.Watcher) agent.Watcher { return countingWatcher{w, &t.watches} }

// countingWatcher counts the streams of the Watcher it wraps into a tally.
type countingWatcher struct {
	w agent.Watcher
	t *watchTally
}

// Watch implements agent.Watcher.
func (c countingWatcher) Watch(ctx context.Context, req agent.WatchRequest, h agent.WatchHandler) {
	c.w.Watch(ctx, req, &countedStream{h: h, c: c.t.counts(req.Resource), list: req.Query.Get("sendInitialEvents") == "true"})
}

// countedStream is one stream's handler, counted. The transport never calls it concurrently.
type countedStream struct {
	h          agent.WatchHandler
	c          *watchCounts
	list, open bool
}

func (s *countedStream) Opened(err error) {
	if err == nil {
		s.open = true
		s.c.held.Add(1)
		if s.list {
			s.c.lists.Add(1)
		} else {
			s.c.watches.Add(1)
		}
	}
	s.h.Opened(err)
}

func (s *countedStream) Event(e agent.WatchEvent) {
	s.c.events.Add(1)
	s.h.Event(e)
}

func (s *countedStream) Ended(err error) {
	if s.open {
		s.open = false
		s.c.held.Add(-1)
	}
	s.h.Ended(err)
}
