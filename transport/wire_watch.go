package transport

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/wire"
)

// wireWatcher carries the agents' watches (agent.Watcher) over a wire.Client of their own: each
// watch is a stream whose answer is decoded as it arrives, on the connection's reader goroutine,
// with no goroutine per stream. It sends what the legacy httpWatcher sends (the kubelet's Accept and
// User-Agent, the node's impersonation as never-indexed literals, like the heartbeats') and ends a
// stream with the same errors (TestWatcherMatchesClientGo runs both).
//
// The watches have connections of their own, apart from the heartbeats': a connection holds at most
// the server's MAX_CONCURRENT_STREAMS (kube-apiserver's default is 100) and a watch holds its stream
// for minutes, so watches sharing the heartbeats' connections would fill them and push the lease
// renewals onto new ones, and a burst of watch events would hold up the heartbeats' answers behind
// it on the reader goroutine. wire.Client dials another connection whenever all of its connections
// are full, up to wire.DefaultMaxConnections, so no watch waits for another to end
// (docs/performance.md).
type wireWatcher struct {
	client    *wire.Client
	prefix    string                     // the server's path prefix, if its URL has one
	header    []wire.Field               // Accept and User-Agent
	node      bool                       // impersonate the agent of each watch (IdentityNode)
	throttled *atomic.Int64              // nil counts no 429s
	clock     clock.WithDelayedExecution // of the Retry-After waits
}

func newWireWatcher(wc *wire.Client, cfg *rest.Config, node bool, throttled *atomic.Int64, clk clock.WithDelayedExecution) (*wireWatcher, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("watch client: %w", err)
	}
	return &wireWatcher{
		client:    wc,
		prefix:    strings.TrimSuffix(u.Path, "/"),
		header:    []wire.Field{{Name: "accept", Value: cfg.AcceptContentTypes}, {Name: "user-agent", Value: cfg.UserAgent}},
		node:      node,
		throttled: throttled,
		clock:     clk,
	}, nil
}

// Watch implements agent.Watcher.
func (w *wireWatcher) Watch(ctx context.Context, req agent.WatchRequest, h agent.WatchHandler) {
	var own []wire.Field
	if user, groups, ok := agent.IdentityFrom(ctx); ok && w.node {
		own = make([]wire.Field, 0, 1+len(groups))
		own = append(own, wire.Field{Name: "impersonate-user", Value: user})
		for _, g := range groups {
			own = append(own, wire.Field{Name: "impersonate-group", Value: g})
		}
	}
	w.send(ctx, &wire.Request{Path: w.prefix + req.Path + "?" + req.Query.Encode(), Header: w.header, Own: own}, h, req.Resource, req.Pods, 0)
}

func (w *wireWatcher) send(ctx context.Context, req *wire.Request, h agent.WatchHandler, resource string, pods bool, attempt int) {
	s := &wireWatch{w: w, ctx: ctx, req: req, attempt: attempt,
		dec: eventDecoder{h: h, pods: pods}, resource: resource, meter: agent.MeterFrom(ctx)}
	w.client.Stream(ctx, req, wire.Handlers{OnResponse: s.response, OnData: s.data, OnEnd: s.end})
}

// wireWatch is one watch stream's state: a few words and the decoder's, with no buffer while no
// event is cut across DATA frames.
type wireWatch struct {
	w        *wireWatcher
	ctx      context.Context
	req      *wire.Request
	attempt  int          // client-go's retries of a refusal with Retry-After
	dec      eventDecoder // its handler is the watch's
	resource string
	meter    *agent.Meter // nil: not an agent loop's
	state    watchState
	refused  *refused // a refusal's answer, read until its end
	err      error    // what a handler ended the stream with: an ERROR event, an undecodable stream
}

type watchState uint8

const (
	watchSent    watchState = iota // no answer yet
	watchRefused                   // answered with an error status: its body is being read
	watchOpen                      // accepted: events are being read
	watchDone                      // refused by the watcher itself, and told
)

// refused is what is kept of a refused watch's answer.
type refused struct {
	status                  int
	contentType, retryAfter string
	gzip                    bool
	body                    []byte
}

// maxRefusalBody bounds what is read of a refusal, as the legacy watcher does.
const maxRefusalBody = 1 << 16

func (s *wireWatch) response(r *wire.Response) error {
	if r.Status == http.StatusTooManyRequests && s.w.throttled != nil {
		s.w.throttled.Add(1)
	}
	if r.Status != http.StatusOK {
		s.state = watchRefused
		s.refused = &refused{status: r.Status, contentType: r.ContentType, retryAfter: r.RetryAfter, gzip: r.ContentEncoding == "gzip"}
		return nil
	}
	if r.ContentEncoding != "" && r.ContentEncoding != "gzip" {
		s.state = watchDone
		err := fmt.Errorf("watch %s answered with content encoding %q", s.resource, r.ContentEncoding)
		s.dec.h.Opened(err)
		return err
	}
	s.state = watchOpen
	mt, _, _ := mime.ParseMediaType(r.ContentType)
	s.dec.json = mt != Protobuf
	s.dec.gzip = r.ContentEncoding == "gzip"
	s.dec.h.Opened(nil)
	return nil
}

func (s *wireWatch) data(p []byte) error {
	if s.meter != nil {
		s.meter.Count(0, int64(len(p)))
	}
	switch s.state {
	case watchRefused:
		if room := maxRefusalBody - len(s.refused.body); room > 0 {
			s.refused.body = append(s.refused.body, p[:min(room, len(p))]...)
		}
	case watchOpen:
		if err := s.dec.Write(p); err != nil {
			s.err = err
			return err
		}
	}
	return nil
}

// end is called once, whatever ended the stream: the server, a handler, the context, the connection.
func (s *wireWatch) end(err error) {
	h := s.dec.h
	switch s.state {
	case watchSent:
		if err == nil {
			err = errNoAnswer
		}
		h.Opened(err)
	case watchRefused:
		r := s.refused
		// client-go sends a watch again after the Retry-After of a 429 or 5xx, up to 10 times,
		// before its caller sees the error, as it does any request.
		if wait, ok := (exchange{code: r.status, retryAfter: r.retryAfter}).retry(); ok && s.attempt < maxRetries && s.ctx.Err() == nil {
			// On a goroutine of its own: a fake clock runs the function while it holds its lock,
			// which the send's own timers would wait for.
			s.w.clock.AfterFunc(wait, func() { go s.w.send(s.ctx, s.req, h, s.resource, s.dec.pods, s.attempt+1) })
			return
		}
		body := r.body
		if r.gzip {
			if b, gerr := gunzip(body); gerr == nil {
				body = b
			}
		}
		h.Opened(refusal(r.status, r.contentType, r.retryAfter, body, s.resource))
	case watchOpen:
		derr := s.dec.End()
		switch {
		case s.err != nil:
			err = s.err // the transport's is the same, wrapped as a *url.Error
		case err == nil:
			err = derr
		}
		h.Ended(err)
	}
}

var errNoAnswer = errors.New("watch stream ended without an answer")

// gunzip reads a refusal's gzipped body (net/http's transport would have).
func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(r, maxRefusalBody))
}
