package transport

import (
	"context"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/wire"
)

// asyncSend is one request of sendAsync: send's, its answer handled where it arrives.
type asyncSend struct {
	s                *heartbeatSender
	ctx              context.Context // its values only: the agent's identity and Meter
	method, path, ct string
	body             []byte
	gr               schema.GroupResource
	name             string
	out              protoObject
	deadline         time.Time // zero: no timeout
	attempt          int
	done             func(error)
	// The request, in the same allocation: the same one for every try, sent again only once the
	// last try's answer has come.
	req wire.Request
	own [2]wire.Field // the impersonated user and group
}

// sendAsync is send without the wait: it sends the request over the wire package's connections and
// calls done with what send would return, on the goroutine the answer arrives on (wire.Client.Send),
// the waits for a Retry-After on the clock's timers. ctx's values say whose request it is; its end
// does not cancel it. It returns false, having sent nothing, on the legacy path, which only send
// takes.
func (s *heartbeatSender) sendAsync(ctx context.Context, method, path, contentType string, body []byte, gr schema.GroupResource, name string, out protoObject, done func(error)) bool {
	if s.wire == nil {
		return false
	}
	x := &asyncSend{s: s, ctx: ctx, method: method, path: path + s.query, ct: contentType, body: body, gr: gr, name: name, out: out, done: done}
	if s.timeout > 0 {
		x.deadline = s.clock.Now().Add(s.timeout)
	}
	x.try()
	return true
}

func (x *asyncSend) try() {
	timeout := time.Duration(0)
	if !x.deadline.IsZero() {
		if timeout = x.deadline.Sub(x.s.clock.Now()); timeout <= 0 {
			x.done(context.DeadlineExceeded)
			return
		}
	}
	x.s.fillRequest(&x.req, x.own[:0], x.ctx, x.method, x.path, x.ct, x.body)
	x.s.wire.Send(&x.req, timeout, x.answered)
}

// answered is send's loop after each try: a retry after the answer's Retry-After, within the
// timeout, or the answer decoded.
func (x *asyncSend) answered(resp *wire.Response, err error) {
	ex, err := x.s.exchange(x.ctx, x.body, resp, err)
	if err != nil {
		x.done(err)
		return
	}
	if wait, ok := ex.retry(); ok && x.attempt < maxRetries {
		x.attempt++
		go x.retryAfter(wait) // rare: a goroutine for the wait, as send's parks its worker
		return
	}
	x.done(decode(ex, x.method, x.gr, x.name, x.out))
}

// exchange is what send's overWire makes of a wire answer: the bytes counted into the request's
// Meter, a 429 into the fleet's tally.
func (s *heartbeatSender) exchange(ctx context.Context, body []byte, resp *wire.Response, err error) (exchange, error) {
	m := agent.MeterFrom(ctx)
	if m != nil {
		m.Count(int64(len(body)), 0)
	}
	if err != nil {
		return exchange{}, err
	}
	if m != nil {
		m.Count(0, resp.WireBytes)
	}
	if resp.Status == http.StatusTooManyRequests && s.throttled != nil {
		s.throttled.Add(1)
	}
	return exchange{code: resp.Status, contentType: resp.ContentType, retryAfter: resp.RetryAfter, body: resp.Body}, nil
}

// retryAfter sends the request again after wait, or fails it at its deadline if that comes first, as
// send's wait ends with its context's.
func (x *asyncSend) retryAfter(wait time.Duration) {
	if !x.deadline.IsZero() {
		if left := x.deadline.Sub(x.s.clock.Now()); left <= wait {
			<-x.s.clock.After(left)
			x.done(context.DeadlineExceeded)
			return
		}
	}
	<-x.s.clock.After(wait)
	x.try()
}
