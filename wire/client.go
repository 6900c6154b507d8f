package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/utils/clock"
)

// Client sends requests to one apiserver over as many connections as the server's
// MAX_CONCURRENT_STREAMS needs, up to Config.MaxConnections, dialled on first use and again after
// one fails.
type Client struct {
	cfg          Config
	tls          *tls.Config
	addr         string // host:port to dial
	authority    string
	streamWindow uint32
	clock        clock.WithDelayedExecution
	ctx          context.Context // of the dials: Close ends one in progress
	cancel       context.CancelFunc

	mu      sync.Mutex    // never held while dialling: a hung dial must not hold up the others
	conns   []*conn       // usable connections, oldest first
	dialing *dialCall     // the dial in progress, which every caller that needs a connection waits for
	changed chan struct{} // closed and made again when a place may have freed: waiting callers look again
	closed  bool
	waiting atomic.Int32 // callers waiting for a place on a connection (wait)

	authGen  atomic.Uint64 // the credentials' generation: a writer reads them again when it moves
	reauthMu sync.Mutex    // one renewal at a time (reauth)
}

// dialCall is one dial, shared by the callers waiting for it.
type dialCall struct {
	done chan struct{} // closed once err is set and the connection, if any, is in conns
	err  error
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
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.handshakeTimeout == 0 {
		cfg.handshakeTimeout = tlsHandshakeTimeout
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{cfg: cfg, tls: t, addr: addr, authority: u.Host, streamWindow: w, clock: clk, ctx: ctx, cancel: cancel,
		changed: make(chan struct{})}, nil
}

// Close closes the connections; requests in flight fail, and the Client dials no more.
func (c *Client) Close() {
	c.mu.Lock()
	conns := c.conns
	c.conns, c.closed = nil, true
	c.wakeLocked()
	c.mu.Unlock()
	c.cancel()
	for _, cn := range conns {
		cn.fail(net.ErrClosed)
	}
}

// errClientClosed is what a request of a closed Client fails with.
var errClientClosed = errors.New("wire: client closed")

// pick returns a connection with room for one more stream, dialling one if none has.
func (c *Client) pick(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	cn, err := c.reserveLocked()
	c.mu.Unlock()
	if cn != nil || err != nil {
		return cn, err
	}
	return c.wait(ctx)
}

// reserveLocked reserves a stream on a connection with room for one, or returns none.
func (c *Client) reserveLocked() (*conn, error) {
	if c.closed {
		return nil, errClientClosed
	}
	for _, cn := range c.conns {
		if cn.reserve() {
			return cn, nil
		}
	}
	return nil, nil
}

// wait returns a connection with room for one more stream once one has: a new one it dials, or
// shares the dial of, while the Client may dial more (mayDialLocked), else one whose stream ends
// or whose server raises its limit. It gives up when ctx ends, or when the dial it waited for
// failed.
func (c *Client) wait(ctx context.Context) (*conn, error) {
	c.waiting.Add(1) // before looking: a place freed after the look wakes this caller
	defer c.waiting.Add(-1)
	var d *dialCall
	for {
		c.mu.Lock()
		if cn, err := c.reserveLocked(); cn != nil || err != nil {
			c.mu.Unlock()
			return cn, err
		}
		if d != nil {
			select {
			case <-d.done:
				if d.err != nil {
					c.mu.Unlock()
					return nil, d.err
				}
				d = nil // its connection is full already: another dial, if one may
			default:
			}
		}
		if d == nil {
			switch {
			case c.dialing != nil:
				d = c.dialing
			case c.mayDialLocked():
				d = &dialCall{done: make(chan struct{})}
				c.dialing = d
				go c.dialFor(d)
			}
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// mayDialLocked says whether a new connection would take streams the ones there are cannot: not
// past MaxConnections, and not while the server says it takes none (MAX_CONCURRENT_STREAMS 0 on
// a connection), where every new connection would be as full as the old ones at once. With no
// connection at all it always may: a server restarted may take streams again.
func (c *Client) mayDialLocked() bool {
	if len(c.conns) == 0 {
		return true
	}
	if len(c.conns) >= c.cfg.MaxConnections {
		return false
	}
	for _, cn := range c.conns {
		if cn.takesNone() {
			return false
		}
	}
	return true
}

// dialFor makes d's connection, on the Client's context rather than a caller's: the callers that
// wait for it each give up on their own context, and the dial goes on for the others.
func (c *Client) dialFor(d *dialCall) {
	cn, err := c.dial(c.ctx)
	c.mu.Lock()
	c.dialing = nil
	switch {
	case err != nil:
	case c.closed:
		err = errClientClosed
	case cn.failure() != nil:
		// It failed as soon as it was made and was forgotten before it was kept: a server that
		// accepts and closes at once. Its callers learn why rather than dialling on.
		err = cn.failure()
	default:
		c.conns = append(c.conns, cn)
	}
	d.err = err
	close(d.done)
	c.wakeLocked()
	c.mu.Unlock()
	if err != nil && cn != nil {
		cn.fail(err)
	}
}

// wake tells the callers waiting for a place that one may have freed.
func (c *Client) wake() {
	if c.waiting.Load() == 0 {
		return
	}
	c.mu.Lock()
	c.wakeLocked()
	c.mu.Unlock()
}

func (c *Client) wakeLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// forget drops a connection that takes no new streams.
func (c *Client) forget(cn *conn) {
	c.mu.Lock()
	c.conns = slices.DeleteFunc(c.conns, func(x *conn) bool { return x == cn })
	c.wakeLocked()
	c.mu.Unlock()
}

// retryDelay is how long net/http's HTTP/2 transport waits before sending a request the server
// did not take again (x/net http2/transport_common.go): at once the first time, then 1 s, 2 s,
// 4 s... with up to 10% more, so that the requests a GOAWAY or REFUSED_STREAM sent back do not all
// come again at once.
func retryDelay(retry int) time.Duration {
	if retry <= 1 {
		return 0
	}
	d := time.Second << (retry - 2)
	return d + rand.N(d/10)
}

// backOff waits before a request's retry, or until ctx ends.
func (c *Client) backOff(ctx context.Context, retry int) error {
	d := retryDelay(retry)
	if d == 0 {
		return nil
	}
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.ctx.Done():
		return errClientClosed
	}
}

// Do sends req and waits for its whole answer, or ctx's end. Errors on the wire are what net/http
// returns: a *url.Error naming the method and URL.
//
// A 401 renews the credentials (Config.Refresh) and sends the request once more with them: an
// exec plugin's token that expired, a token file rotated, cost one answer, not a minute of them.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	return c.do(ctx, req, 0, false)
}

// do is Do from its attempt'th try, after a renewal of the credentials if reauthed.
func (c *Client) do(ctx context.Context, req *Request, attempt int, reauthed bool) (*Response, error) {
	for ; ; attempt++ {
		if err := c.backOff(ctx, attempt); err != nil {
			return nil, c.urlError(req, err)
		}
		gen := c.authGen.Load()
		cn, err := c.pick(ctx)
		if err != nil {
			if isRetryable(err) && attempt < maxUnsentRetries && ctx.Err() == nil {
				continue
			}
			return nil, c.urlError(req, err)
		}
		s := &stream{cn: cn, req: req, done: make(chan struct{})}
		cn.send(s)
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
		if s.resp.Status == http.StatusUnauthorized && !reauthed && c.reauth(gen) {
			reauthed = true
			attempt-- // not a request the server did not take: no backoff, and not counted
			continue
		}
		return c.answer(s)
	}
}

// answer is the Response of a stream that ended with one, inflated if it came gzipped.
func (c *Client) answer(s *stream) (*Response, error) {
	if s.resp.ContentEncoding == "gzip" {
		body, err := gunzip(s.resp.Body)
		if err != nil {
			return nil, c.urlError(s.req, err)
		}
		s.resp.Body, s.resp.ContentEncoding = body, ""
	}
	return &s.resp, nil
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
	// A retry runs on a goroutine of its own (below), which waits here: a goroutine per stream
	// the server sent back, none per stream that is open.
	if err := c.backOff(ctx, attempt); err != nil {
		h.OnEnd(c.urlError(req, err))
		return
	}
	cn, err := c.pick(ctx)
	if err != nil {
		if isRetryable(err) && attempt < maxUnsentRetries && ctx.Err() == nil {
			go c.stream(ctx, req, h, attempt+1)
			return
		}
		h.OnEnd(c.urlError(req, err))
		return
	}
	s := &stream{cn: cn, req: req}
	onResponse := h.OnResponse
	if c.cfg.Refresh != nil {
		// A watch refused with 401 goes to its handler as it is, as client-go's; the
		// credentials are renewed meanwhile, off the reader, for the watch the reflector sends next.
		gen := c.authGen.Load()
		onResponse = func(r *Response) error {
			if r.Status == http.StatusUnauthorized {
				go c.reauth(gen)
			}
			if h.OnResponse == nil {
				return nil
			}
			return h.OnResponse(r)
		}
	}
	s.h = &Handlers{OnResponse: onResponse, OnData: h.OnData, OnEnd: func(err error) {
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
	cn.send(s)
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
