package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"slices"
	"sync"

	"golang.org/x/net/http2"
)

// Client sends requests to one apiserver over as many connections as the server's
// MAX_CONCURRENT_STREAMS needs, dialled on first use and again after one fails.
type Client struct {
	cfg          Config
	tls          *tls.Config
	addr         string // host:port to dial
	authority    string
	streamWindow uint32

	mu     sync.Mutex // held while dialling: callers wait for the one connection being made
	conns  []*conn    // usable connections, oldest first
	closed bool
}

// maxUnsentRetries is how often net/http's HTTP/2 transport sends a request again on a new
// connection when the server did not take it.
const maxUnsentRetries = 6

// New returns a Client for cfg. It dials nothing until its first request.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	t := cfg.TLS.Clone()
	if t == nil {
		t = &tls.Config{}
	}
	t.NextProtos = []string{http2.NextProtoTLS}
	if t.ServerName == "" {
		t.ServerName = u.Hostname()
	}
	w := cfg.StreamWindow
	if w == 0 {
		w = defaultStreamWindow
	}
	if cfg.ReadIdleTimeout == 0 {
		cfg.ReadIdleTimeout = defaultReadIdleTimeout
	}
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = defaultPingTimeout
	}
	return &Client{cfg: cfg, tls: t, addr: addr, authority: u.Host, streamWindow: w}, nil
}

// Close closes the connections; requests in flight fail, and the Client dials no more.
func (c *Client) Close() {
	c.mu.Lock()
	conns := c.conns
	c.conns, c.closed = nil, true
	c.mu.Unlock()
	for _, cn := range conns {
		cn.fail(net.ErrClosed)
	}
}

// errClientClosed is what a request of a closed Client fails with.
var errClientClosed = errors.New("wire: client closed")

// pick returns a connection with room for one more stream, dialling one if none has.
func (c *Client) pick(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClientClosed
	}
	for _, cn := range c.conns {
		if cn.reserve() {
			return cn, nil
		}
	}
	cn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	cn.reserve()
	c.conns = append(c.conns, cn)
	return cn, nil
}

// forget drops a connection that takes no new streams.
func (c *Client) forget(cn *conn) {
	c.mu.Lock()
	c.conns = slices.DeleteFunc(c.conns, func(x *conn) bool { return x == cn })
	c.mu.Unlock()
}

// Do sends req and waits for its whole answer, or ctx's end. Errors on the wire are what net/http
// returns: a *url.Error naming the method and URL.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	for attempt := 0; ; attempt++ {
		cn, err := c.pick(ctx)
		if err != nil {
			return nil, c.urlError(req, err)
		}
		s := &stream{cn: cn, req: req, done: make(chan struct{})}
		cn.enqueue(item{kind: itemOpen, s: s})
		select {
		case <-s.done:
		case <-ctx.Done():
			cn.end(s, ctx.Err(), true)
			<-s.done
		}
		if s.err != nil {
			if isRetryable(s.err) && attempt < maxUnsentRetries && ctx.Err() == nil {
				continue
			}
			return nil, c.urlError(req, s.err)
		}
		if s.resp.ContentEncoding == "gzip" {
			body, err := gunzip(s.resp.Body)
			if err != nil {
				return nil, c.urlError(req, err)
			}
			s.resp.Body, s.resp.ContentEncoding = body, ""
		}
		return &s.resp, nil
	}
}

// Stream sends req and hands its answer to h as it arrives (see Handlers), until the answer ends,
// h fails, or ctx ends. It returns at once; h.OnEnd is called exactly once, also when the request
// cannot be sent. The request is sent again on a new connection if the server did not take it
// before any of its answer arrived.
func (c *Client) Stream(ctx context.Context, req *Request, h Handlers) {
	c.stream(ctx, req, &h, 0)
}

func (c *Client) stream(ctx context.Context, req *Request, h *Handlers, attempt int) {
	if err := ctx.Err(); err != nil {
		h.OnEnd(c.urlError(req, err))
		return
	}
	cn, err := c.pick(ctx)
	if err != nil {
		h.OnEnd(c.urlError(req, err))
		return
	}
	s := &stream{cn: cn, req: req}
	s.h = &Handlers{OnResponse: h.OnResponse, OnData: h.OnData, OnEnd: func(err error) {
		switch {
		case err == nil:
			h.OnEnd(nil)
		case isRetryable(err) && attempt < maxUnsentRetries && ctx.Err() == nil:
			go c.stream(ctx, req, h, attempt+1) // on another connection, off this one's goroutines
		default:
			h.OnEnd(c.urlError(req, err))
		}
	}}
	s.cbMu.Lock() // end reads stopCtx, and may run as soon as AfterFunc returns
	s.stopCtx = context.AfterFunc(ctx, func() { cn.end(s, ctx.Err(), true) })
	s.cbMu.Unlock()
	cn.enqueue(item{kind: itemOpen, s: s})
}

func (c *Client) urlError(req *Request, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return err
	}
	if r, ok := err.(retryable); ok {
		err = r.err
	}
	return &url.Error{Op: op(req.Method), URL: c.cfg.Host + req.Path, Err: err}
}
