package wire

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Send sends req as Do does and calls done once with what Do would return, without waiting for the
// answer: when a connection has room, the request is queued on it and done runs on the connection's
// reader goroutine as the answer's last frame arrives, so that a caller with many requests in
// flight (a fleet's renewals) is woken neither to send nor to receive. What must wait (a dial, a
// place on a full connection, a retry after the server did not take the request, credentials
// renewed after a 401) waits on a goroutine of its own, from where done is called. done must not
// block: the connection's other answers wait for it.
//
// The request has no context: timeout, if not 0, bounds it as a context's deadline bounds Do, and
// nothing else cancels it but the Client's Close. The answer's Body is valid only until done
// returns: its buffer serves another answer then.
func (c *Client) Send(req *Request, timeout time.Duration, done func(*Response, error)) {
	var deadline time.Time
	if timeout > 0 {
		deadline = c.clock.Now().Add(timeout)
	}
	c.mu.Lock()
	cn, err := c.reserveLocked()
	c.mu.Unlock()
	switch {
	case err != nil:
		done(nil, c.urlError(req, err))
		return
	case cn == nil:
		go c.sendWaiting(req, deadline, done, 0, false)
		return
	}
	ss := &sendStream{stream: stream{cn: cn, req: req}, c: c, deadline: deadline, gen: c.authGen.Load(), done: done}
	s := &ss.stream
	s.send = ss
	if timeout > 0 {
		// On a goroutine of its own: a fake clock runs the function while it holds its lock, which
		// done's reads of the clock would wait for.
		s.timer = c.clock.AfterFunc(timeout, func() { go cn.end(s, context.DeadlineExceeded, true) })
	}
	cn.send(s)
}

// sendStream is the stream of a request Send queued, and what finishes it: one allocation.
type sendStream struct {
	stream
	c        *Client
	deadline time.Time // zero: none
	gen      uint64    // the credentials' generation when it was sent
	done     func(*Response, error)
}

// sent finishes a request Send queued, once its stream has ended.
func (ss *sendStream) sent() {
	s, c, deadline, gen, done := &ss.stream, ss.c, ss.deadline, ss.gen, ss.done
	if s.timer != nil {
		s.timer.Stop()
	}
	switch {
	case s.err != nil && isRetryable(s.err) && !c.passed(deadline):
		go c.sendWaiting(s.req, deadline, done, 1, false)
	case s.err != nil:
		done(nil, c.urlError(s.req, s.err))
	case s.resp.Status == http.StatusUnauthorized && c.cfg.Refresh != nil:
		go func() {
			if c.reauth(gen) {
				c.sendWaiting(s.req, deadline, done, 0, true)
				return
			}
			done(c.answer(s))
		}()
	default:
		done(c.answer(s))
		if s.pooled != nil {
			answerBodies.Put(s.pooled)
		}
	}
}

// pooledBody is the size of the buffers Send's answers are read into, when they fit: a Lease
// renewal's answer does, a Node's does not.
const pooledBody = 2 << 10

var answerBodies = sync.Pool{New: func() any { b := make([]byte, 0, pooledBody); return &b }}

// sendWaiting is Send's request from its attempt'th try on, as Do sends it, on a goroutine that may
// wait.
func (c *Client) sendWaiting(req *Request, deadline time.Time, done func(*Response, error), attempt int, reauthed bool) {
	ctx := context.Background()
	if !deadline.IsZero() {
		// What is left of the timeout, on the Client's clock, as a context's timeout.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline.Sub(c.clock.Now()))
		defer cancel()
	}
	done(c.do(ctx, req, attempt, reauthed))
}

// passed says whether deadline (zero: none) has passed on the Client's clock.
func (c *Client) passed(deadline time.Time) bool {
	return !deadline.IsZero() && !c.clock.Now().Before(deadline)
}
