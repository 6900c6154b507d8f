package transport

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/pause"
	"fakelet.dev/fakelet/wire"
)

// heartbeatSender sends the fleet's heartbeat requests (lease renewals, status patches) as client-go
// would send them, and decodes the answers as client-go would: over the wire package's connections,
// or, with legacy set, over the heartbeat connection's http.Client (whose wrappers impersonate and
// count). It retries an answer that carries Retry-After (a 429 of API Priority and Fairness, a 5xx)
// as client-go does: up to 10 times, within the client timeout.
type heartbeatSender struct {
	http      *http.Client // the legacy path
	wire      *wire.Client // nil: the legacy path
	host      string       // scheme://host[:port], for the legacy path's URLs
	query     string       // "?timeout=10s", as client-go adds its client timeout to every URL
	timeout   time.Duration
	header    []wire.Field  // Accept, User-Agent and the protobuf Content-Type
	node      bool          // impersonate the agent of each request (IdentityNode)
	throttled *atomic.Int64 // nil counts no 429s
	clock     clock.Clock   // of the Retry-After waits
}

// exchange is one request's wire-level outcome.
type exchange struct {
	code        int
	contentType string
	retryAfter  string
	body        []byte
	buf         *bytes.Buffer // holds body, from bodies; nil if it is not pooled
}

func (x exchange) free() {
	if x.buf != nil {
		bodies.Put(x.buf)
	}
}

var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// send sends one request and decodes its answer into out.
func (s *heartbeatSender) send(ctx context.Context, method, path, contentType string, body []byte, gr schema.GroupResource, name string, out protoObject) error {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	path += s.query
	for attempt := 0; ; attempt++ {
		var x exchange
		var err error
		if s.wire != nil {
			x, err = s.overWire(ctx, method, path, contentType, body)
		} else {
			x, err = s.overHTTP(ctx, method, path, contentType, body)
		}
		if err != nil {
			return err
		}
		if wait, ok := x.retry(); ok && attempt < maxRetries {
			x.free()
			if err := pause.On(ctx, s.clock, wait); err != nil {
				return err
			}
			continue
		}
		err = decode(x, method, gr, name, out)
		x.free()
		return err
	}
}

func (s *heartbeatSender) overWire(ctx context.Context, method, path, contentType string, body []byte) (exchange, error) {
	resp, err := s.wire.Do(ctx, s.wireRequest(ctx, method, path, contentType, body))
	return s.exchange(ctx, body, resp, err)
}

// wireRequest is the request of an agent's heartbeat: the shared header, with contentType, and the
// agent's identity in its own fields.
func (s *heartbeatSender) wireRequest(ctx context.Context, method, path, contentType string, body []byte) *wire.Request {
	req := &wire.Request{}
	s.fillRequest(req, nil, ctx, method, path, contentType, body)
	return req
}

// fillRequest makes req wireRequest's, its own fields appended to own.
func (s *heartbeatSender) fillRequest(req *wire.Request, own []wire.Field, ctx context.Context, method, path, contentType string, body []byte) {
	h := s.header
	if contentType != Protobuf {
		h = slices.Clone(s.header)
		for i := range h {
			if h[i].Name == "content-type" {
				h[i].Value = contentType
			}
		}
	}
	if user, groups, ok := agent.IdentityFrom(ctx); ok && s.node {
		own = append(own, wire.Field{Name: "impersonate-user", Value: user})
		for _, g := range groups {
			own = append(own, wire.Field{Name: "impersonate-group", Value: g})
		}
	}
	*req = wire.Request{Method: method, Path: path, Header: h, Own: own, Body: body}
}

func (s *heartbeatSender) overHTTP(ctx context.Context, method, path, contentType string, body []byte) (exchange, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.host+path, bytes.NewReader(body))
	if err != nil {
		return exchange{}, err
	}
	req.Header = make(http.Header, len(s.header)+1)
	for _, f := range s.header {
		req.Header[http.CanonicalHeaderKey(f.Name)] = []string{f.Value}
	}
	req.Header["Content-Type"] = []string{contentType}
	resp, err := s.http.Do(req)
	if err != nil {
		return exchange{}, err
	}
	buf := bodies.Get().(*bytes.Buffer)
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		bodies.Put(buf)
		return exchange{}, fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", err)
	}
	return exchange{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), retryAfter: resp.Header.Get("Retry-After"), body: buf.Bytes(), buf: buf}, nil
}

// retry says whether client-go would send the request again, and after how long: a 429 or 5xx
// answer with a Retry-After of whole seconds.
func (x exchange) retry() (time.Duration, bool) {
	if x.code != http.StatusTooManyRequests && x.code < 500 {
		return 0, false
	}
	s, ok := x.retryAfterSeconds()
	return time.Duration(s) * time.Second, ok
}

func (x exchange) retryAfterSeconds() (int, bool) {
	i, err := strconv.Atoi(x.retryAfter)
	return i, err == nil
}
