package fleet

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"testing"

	"fakelet.dev/fakelet/agent"
)

// streamScript plays one stream to its handler: opened, some events, ended.
type streamScript struct{ refused bool }

func (s streamScript) Watch(_ context.Context, _ agent.WatchRequest, h agent.WatchHandler) {
	if s.refused {
		h.Opened(errors.New("410 Gone"))
		return
	}
	h.Opened(nil)
	h.Event(agent.WatchEvent{Type: agent.EventAdded, ResourceVersion: "1"})
	h.Event(agent.WatchEvent{Type: agent.EventBookmark, ResourceVersion: "2", InitialEventsEnd: true})
}

type nopHandler struct{ ended int }

func (*nopHandler) Opened(error)           {}
func (*nopHandler) Event(agent.WatchEvent) {}
func (h *nopHandler) Ended(error)          { h.ended++ }

// The tally counts, per resource, the streams held, the streaming lists and plain watches opened
// (a refused one is neither), and the events; a stream that ended is no longer held.
func TestWatchTallyCountsStreams(t *testing.T) {
	tally := NewTally(0)
	list := url.Values{"watch": {"true"}, "sendInitialEvents": {"true"}}
	resume := url.Values{"watch": {"true"}, "resourceVersion": {"2"}}
	ok := countingWatcher{streamScript{}, &tally.watches}
	refused := countingWatcher{streamScript{refused: true}, &tally.watches}

	var pods, nodes nopHandler
	ok.Watch(t.Context(), agent.WatchRequest{Resource: "pods", Query: list}, &pods)
	refused.Watch(t.Context(), agent.WatchRequest{Resource: "pods", Query: list}, &pods)
	ok.Watch(t.Context(), agent.WatchRequest{Resource: "nodes", Query: list}, &nodes)
	want := []WatchSeries{{Resource: "nodes", Held: 1, Lists: 1, Events: 2}, {Resource: "pods", Held: 1, Lists: 1, Events: 2}}
	if got := tally.Watches(); !reflect.DeepEqual(got, want) {
		t.Errorf("watches %+v, want %+v", got, want)
	}

	// The pods' stream ends at the server's timeout and the reflector resumes it.
	var s *countedStream
	countingWatcher{handlerOf{&s}, &tally.watches}.Watch(t.Context(), agent.WatchRequest{Resource: "pods", Query: resume}, &pods)
	s.Opened(nil)
	s.Ended(nil)
	if pods.ended != 1 {
		t.Errorf("the agent's handler saw %d ends, want 1", pods.ended)
	}
	want[1] = WatchSeries{Resource: "pods", Held: 1, Lists: 1, Watches: 1, Events: 2}
	if got := tally.Watches(); !reflect.DeepEqual(got, want) {
		t.Errorf("after a resumed watch ended: %+v, want %+v", got, want)
	}
}

// handlerOf is a Watcher that hands its stream's handler to the test.
type handlerOf struct{ s **countedStream }

func (w handlerOf) Watch(_ context.Context, _ agent.WatchRequest, h agent.WatchHandler) {
	*w.s = h.(*countedStream)
}
