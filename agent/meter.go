package agent

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
)

// Meter counts the body bytes of one loop's requests and responses. Each of an agent's loops sends
// one request at a time with its own Meter in the request's context, and the transport that carries
// the requests (the fleet's) adds to it (MeterFrom); the agent reads it into the Request it records.
// A client-go retry of a request (after a 429) counts too: it is on the wire as well.
type Meter struct {
	sent, received atomic.Int64
}

type meterKey struct{}

// MeterFrom returns the Meter of the agent loop that makes a request with ctx, or nil if the request
// is not an agent's.
func MeterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// Exchange counts req's body and resp's: resp's from its Content-Length, or, when the server sent
// none (a streamed body), as it is read, by wrapping resp.Body. resp may be nil.
func (m *Meter) Exchange(req *http.Request, resp *http.Response) {
	if req.ContentLength > 0 {
		m.sent.Add(req.ContentLength)
	}
	if resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	if resp.ContentLength >= 0 {
		m.received.Add(resp.ContentLength)
		return
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, m: m}
}

// take returns the bytes counted since the last take and starts again from zero.
func (m *Meter) take() (sent, received int64) {
	return m.sent.Swap(0), m.received.Swap(0)
}

type countingBody struct {
	io.ReadCloser
	m *Meter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.m.received.Add(int64(n))
	return n, err
}

// Count adds bytes a transport counted itself: a request's body sent, an answer's body received.
func (m *Meter) Count(sent, received int64) {
	if sent != 0 {
		m.sent.Add(sent)
	}
	if received != 0 {
		m.received.Add(received)
	}
}

// Counted returns the bytes counted so far, for transports' tests.
func (m *Meter) Counted() (sent, received int64) { return m.sent.Load(), m.received.Load() }
