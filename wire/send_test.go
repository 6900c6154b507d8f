package wire

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"golang.org/x/net/http2"
	clocktesting "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// sendResult is what Send's done was called with.
type sendResult struct {
	resp *Response
	err  error
}

// send calls c.Send and returns a channel of what its done is called with; a second call fails the
// test.
func send(t *testing.T, c *Client, req *Request, timeout time.Duration) <-chan sendResult {
	t.Helper()
	out := make(chan sendResult, 2)
	c.Send(req, timeout, func(resp *Response, err error) { out <- sendResult{resp, err} })
	return out
}

func receive(t *testing.T, results <-chan sendResult) sendResult {
	t.Helper()
	r := <-results
	select {
	case again := <-results:
		t.Fatalf("done called twice: %v, then %v", r, again)
	default:
	}
	return r
}

// TestSendAnswersAsDoDoes: Send's answer is Do's, on a new connection (dialled off the caller) and on
// one it has already.
func TestSendAnswersAsDoDoes(t *testing.T) {
	c := goClient(t, goServer(t), Config{})
	for i := range 2 {
		r := receive(t, send(t, c, &Request{Method: "PUT", Path: "/a?timeout=10s", Body: []byte("lease")}, 10*time.Second))
		if want := "PUT /a?timeout=10s 5  "; r.err != nil || r.resp.Status != 200 || string(r.resp.Body) != want {
			t.Fatalf("request %d: got %v, %v; want 200 %q", i, r.resp, r.err, want)
		}
	}
}

// TestSendTimesOut: a request the server never answers fails at its timeout with Do's error, and
// its stream is reset, on the Client's clock.
func TestSendTimesOut(t *testing.T) {
	got, reset := make(chan struct{}), make(chan struct{})
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		rc.Respond(r.StreamID, 200, "text/plain", nil) // the warm-up
		if r, ok = rc.Request(); !ok {
			return
		}
		close(got)
		for {
			f, err := rc.ReadFrame()
			if err != nil {
				return
			}
			if rst, ok := f.(*http2.RSTStreamFrame); ok && rst.StreamID == r.StreamID && rst.ErrCode == http2.ErrCodeCancel {
				close(reset)
				rc.Request()
				return
			}
		}
	})
	clk := clocktesting.NewFakeClock(time.Now())
	c := scriptedClient(t, srv, Config{Clock: clk, ReadIdleTimeout: time.Hour, PingTimeout: time.Hour})
	if _, err := c.Do(context.Background(), &Request{Path: "/warm"}); err != nil {
		t.Fatal(err)
	}
	results := send(t, c, &Request{Method: "PUT", Path: "/x"}, 10*time.Second)
	<-got
	clk.Step(10*time.Second - time.Nanosecond)
	select {
	case r := <-results:
		t.Fatalf("ended before its timeout: %v, %v", r.resp, r.err)
	default:
	}
	clk.Step(time.Nanosecond)
	r := receive(t, results)
	var ue *url.Error
	if !errors.As(r.err, &ue) || !ue.Timeout() || !errors.Is(r.err, context.DeadlineExceeded) || ue.Op != "Put" {
		t.Fatalf("got %v, %v; want a timeout *url.Error of Put", r.resp, r.err)
	}
	<-reset
}

// TestSendRetriesWhatTheServerDidNotTake: a request refused with REFUSED_STREAM goes again, and done
// is called once, with the answer to the second.
func TestSendRetriesWhatTheServerDidNotTake(t *testing.T) {
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		if r.Get(":path") == "/warm" {
			rc.Respond(r.StreamID, 200, "text/plain", nil)
			if r, ok = rc.Request(); !ok {
				return
			}
		}
		rc.Reset(r.StreamID, http2.ErrCodeRefusedStream)
		if r, ok = rc.Request(); ok {
			rc.Respond(r.StreamID, 200, "text/plain", []byte("ok"))
		}
		rc.Request()
	})
	c := scriptedClient(t, srv, Config{})
	if _, err := c.Do(context.Background(), &Request{Path: "/warm"}); err != nil {
		t.Fatal(err)
	}
	r := receive(t, send(t, c, &Request{Path: "/x"}, 10*time.Second))
	if r.err != nil || string(r.resp.Body) != "ok" {
		t.Fatalf("got %v, %v; want the answer to the request sent again", r.resp, r.err)
	}
}

// TestSendRenewsCredentialsAfterUnauthorized: a 401 renews the credentials and sends the request
// once more, as Do does.
func TestSendRenewsCredentialsAfterUnauthorized(t *testing.T) {
	c, requests, runs := execPluginClient(t)
	r := receive(t, send(t, c, &Request{Path: "/x"}, 0))
	if n := runs(); r.err != nil || r.resp.Status != 200 || string(r.resp.Body) != "ok" || requests.Load() != 2 || n != 2 {
		t.Errorf("answered %v, %v after %d requests and %d runs of the plugin, want 200 after 2 requests and 2 runs", r.resp, r.err, requests.Load(), n)
	}
}

// TestSendOfAClosedClientFails: done is called at once with Do's error.
func TestSendOfAClosedClientFails(t *testing.T) {
	c := goClient(t, goServer(t), Config{})
	c.Close()
	r := receive(t, send(t, c, &Request{Path: "/x"}, time.Second))
	if !errors.Is(r.err, errClientClosed) {
		t.Fatalf("got %v, %v; want %v", r.resp, r.err, errClientClosed)
	}
}
