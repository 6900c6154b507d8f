package agent

import (
	"context"
	"net/url"

	corev1 "k8s.io/api/core/v1"
)

// Watcher carries the agents' watch streams. It is the one way an agent watches, so that the
// transport, not the agent, decides what a stream costs: thousands of agents hold several streams
// each, and none of them gets an informer, a store or a goroutine of its own in the agent.
type Watcher interface {
	// Watch sends req in ctx, which carries the agent's identity (IdentityFrom), and returns at once.
	// The transport then calls h.Opened once; if the server accepted the watch, h.Event for each
	// event in order and h.Ended once. Calls on one handler never overlap; they happen on the
	// transport's goroutines and must not block. The stream ends when ctx does.
	Watch(ctx context.Context, req WatchRequest, h WatchHandler)
}

// WatchRequest is one watch as a kubelet's reflector sends it.
type WatchRequest struct {
	// Resource names the watch in what is recorded ("pods", "configmaps").
	Resource string
	// Path is the collection's URL path: /api/v1/pods, /api/v1/namespaces/NS/configmaps.
	Path string
	// Query is the watch's query (watch=true included), as client-go encodes ListOptions.
	Query url.Values
	// Pods asks the transport to decode each event's object into WatchEvent.Pod (the pod watch).
	Pods bool
}

func (r WatchRequest) String() string { return r.Path + "?" + r.Query.Encode() }

// WatchEvent is what an agent reads of one watch event: enough to resume the watch where it ended,
// and to know when a streaming list has sent all the objects that were there.
type WatchEvent struct {
	Type            string // ADDED, MODIFIED, DELETED or BOOKMARK; an ERROR event ends the stream instead
	ResourceVersion string
	// InitialEventsEnd is set on the bookmark that ends a streaming list's initial events (the
	// k8s.io/initial-events-end annotation).
	InitialEventsEnd bool
	// Pod is the event's pod, for a request with Pods set; the handler may keep it and must not
	// modify it.
	Pod *corev1.Pod
}

// Watch event types as the apiserver sends them.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
	EventBookmark = "BOOKMARK"
)

// WatchHandler receives one watch stream.
type WatchHandler interface {
	// Opened says whether the server accepted the watch: nil, or why not (an *errors.StatusError for
	// an HTTP error such as 410 Gone or 429, another error if the request got no answer). After an
	// error nothing more is called.
	Opened(err error)
	// Event is one event of the stream.
	Event(WatchEvent)
	// Ended says how the stream ended: nil when the server closed it (its timeoutSeconds), an
	// *errors.StatusError for an ERROR event (410 Gone for an expired resource version), another error
	// for a broken connection or an undecodable stream.
	Ended(err error)
}
