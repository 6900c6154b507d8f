package wire

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/internal/h2script"
)

func TestDoSendsAndReceives(t *testing.T) {
	c := goClient(t, goServer(t), Config{})
	body := bytes.Repeat([]byte("x"), 200<<10) // more than the server's initial window: send flow control
	resp, err := c.Do(context.Background(), &Request{Method: "PUT", Path: "/a/b?timeout=10s", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if want := "PUT /a/b?timeout=10s 204800  "; resp.Status != 200 || string(resp.Body) != want || resp.ContentType != "text/plain" {
		t.Errorf("got %d %q %q, want 200 %q text/plain", resp.Status, resp.Body, resp.ContentType, want)
	}
	if resp.WireBytes != int64(len(resp.Body)) {
		t.Errorf("%d bytes on the wire for a body of %d", resp.WireBytes, len(resp.Body))
	}
	// An answer larger than the stream window, in one piece.
	resp, err = c.Do(context.Background(), &Request{Method: "GET", Path: "/big?n=3000000"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(resp.Body, pattern(3000000)) {
		t.Errorf("a body of 3000000 bytes came as %d bytes, not as sent", len(resp.Body))
	}
}

// TestStreamReplenishesWindows streams an answer many times the stream and connection windows
// through Stream: it arrives whole, in order, and only as fast as the handler consumes it.
func TestStreamReplenishesWindows(t *testing.T) {
	c := goClient(t, goServer(t), Config{StreamWindow: 65535})
	const size = 5 << 20
	var got bytes.Buffer
	var status int
	done := make(chan error, 1)
	c.Stream(context.Background(), &Request{Method: "GET", Path: "/big?n=" + itoa(size)}, Handlers{
		OnResponse: func(r *Response) error { status = r.Status; return nil },
		OnData:     func(b []byte) error { got.Write(b); return nil },
		OnEnd:      func(err error) { done <- err },
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if status != 200 || !bytes.Equal(got.Bytes(), pattern(size)) {
		t.Errorf("status %d, %d bytes, want 200 and the %d bytes sent", status, got.Len(), size)
	}
}

// TestStreamEndsWithItsContext: cancelling a stream's context ends it with the context's error,
// once, and resets it on the wire (Go's server ends the handler).
func TestStreamEndsWithItsContext(t *testing.T) {
	c := goClient(t, goServer(t), Config{StreamWindow: 65535})
	ctx, cancel := context.WithCancel(context.Background())
	var ends atomic.Int32
	done := make(chan error, 2)
	c.Stream(ctx, &Request{Method: "GET", Path: "/big?n=10000000"}, Handlers{
		OnData: func(b []byte) error { cancel(); return nil },
		OnEnd:  func(err error) { ends.Add(1); done <- err },
	})
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the stream ended with %v, want context.Canceled", err)
	}
	// The connection goes on serving.
	if _, err := c.Do(context.Background(), &Request{Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	if n := ends.Load(); n != 1 {
		t.Errorf("OnEnd called %d times", n)
	}
}

// TestHandlerErrorEndsTheStream: a handler's error ends its stream with that error.
func TestHandlerErrorEndsTheStream(t *testing.T) {
	c := goClient(t, goServer(t), Config{})
	boom := errors.New("boom")
	done := make(chan error, 1)
	c.Stream(context.Background(), &Request{Path: "/big?n=100000"}, Handlers{
		OnData: func([]byte) error { return boom },
		OnEnd:  func(err error) { done <- err },
	})
	if err := <-done; !errors.Is(err, boom) {
		t.Errorf("ended with %v, want the handler's error", err)
	}
}

// TestGoAwayRetriesWhatTheServerDidNotTake: of two requests on a connection, the server answers the
// first and sends GOAWAY naming it as the last it takes: the second is sent again on a new
// connection and succeeds, as net/http does.
func TestGoAwayRetriesWhatTheServerDidNotTake(t *testing.T) {
	var first atomic.Bool
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		if first.CompareAndSwap(false, true) {
			a, ok := rc.Request()
			if !ok {
				return
			}
			if _, ok := rc.Request(); !ok {
				return
			}
			rc.GoAway(a.StreamID, http2.ErrCodeNo, nil)
			rc.Respond(a.StreamID, 200, "text/plain", []byte("first"))
			_, _ = rc.Request() // until the client closes the drained connection
			return
		}
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			rc.Respond(r.StreamID, 200, "text/plain", []byte("again"))
		}
	})
	c := scriptedClient(t, srv, Config{})
	var wg sync.WaitGroup
	bodies := make([]string, 2)
	for i := range bodies {
		wg.Go(func() {
			resp, err := c.Do(context.Background(), &Request{Path: "/" + itoa(i)})
			if err != nil {
				t.Error(err)
				return
			}
			bodies[i] = string(resp.Body)
		})
	}
	wg.Wait()
	if got := strings.Join(bodies, ","); got != "first,again" && got != "again,first" {
		t.Errorf("answers %q, want one first and one again", got)
	}
	if n := srv.Accepted(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestGoAwayThenCloseFailsWhatWasTaken: a request the server took, then closed the connection on
// after GOAWAY, fails with net/http's GoAwayError; the next request dials again.
func TestGoAwayThenCloseFailsWhatWasTaken(t *testing.T) {
	var first atomic.Bool
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		if first.CompareAndSwap(false, true) {
			rc.GoAway(r.StreamID, http2.ErrCodeNo, []byte("bye"))
			return // closes the connection
		}
		rc.Respond(r.StreamID, 200, "text/plain", nil)
		rc.Request()
	})
	c := scriptedClient(t, srv, Config{})
	_, err := c.Do(context.Background(), &Request{Method: "PUT", Path: "/x", Body: []byte("b")})
	var ga http2.GoAwayError
	var ue *url.Error
	if !errors.As(err, &ue) || !errors.As(err, &ga) || ga.LastStreamID != 1 || ga.DebugData != "bye" || ue.Op != "Put" {
		t.Fatalf("got %v, want a *url.Error of Put with the server's GoAwayError", err)
	}
	if _, err := c.Do(context.Background(), &Request{Path: "/y"}); err != nil {
		t.Fatal(err)
	}
}

// TestRefusedStreamIsSentAgain: REFUSED_STREAM says the server did not process the request.
func TestRefusedStreamIsSentAgain(t *testing.T) {
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		rc.Reset(r.StreamID, http2.ErrCodeRefusedStream)
		if r, ok = rc.Request(); ok {
			rc.Respond(r.StreamID, 200, "text/plain", []byte("ok"))
		}
		rc.Request()
	})
	c := scriptedClient(t, srv, Config{})
	resp, err := c.Do(context.Background(), &Request{Path: "/x"})
	if err != nil || string(resp.Body) != "ok" {
		t.Fatalf("got %v, %v; want the answer to the request sent again", resp, err)
	}
}

// TestPingIsAnswered: the server's PING comes back acknowledged with its data.
func TestPingIsAnswered(t *testing.T) {
	acked := make(chan [8]byte, 1)
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		rc.Ping([8]byte{1, 2, 3, 4, 5, 6, 7, 8})
		for {
			f, err := rc.ReadFrame()
			if err != nil {
				return
			}
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
				acked <- p.Data
				break
			}
		}
		rc.Respond(r.StreamID, 200, "text/plain", nil)
		rc.Request()
	})
	c := scriptedClient(t, srv, Config{})
	if _, err := c.Do(context.Background(), &Request{Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	if got := <-acked; got != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
		t.Errorf("PING acknowledged with %v", got)
	}
}

// TestMaxConcurrentStreamsOpensAnotherConnection: with the server's limit of one stream reached, a
// second request goes over a second connection rather than waiting.
func TestMaxConcurrentStreamsOpensAnotherConnection(t *testing.T) {
	held := make(chan uint32, 1)
	release := make(chan struct{})
	srv := h2script.New(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 1}}, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			if r.Get(":path") == "/hold" {
				held <- r.StreamID
				<-release
			}
			rc.Respond(r.StreamID, 200, "text/plain", []byte(r.Get(":path")))
		}
	})
	c := scriptedClient(t, srv, Config{})
	if _, err := c.Do(context.Background(), &Request{Path: "/first"}); err != nil { // the SETTINGS are in
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background(), &Request{Path: "/hold"})
		done <- err
	}()
	<-held
	resp, err := c.Do(context.Background(), &Request{Path: "/second"})
	close(release)
	if err != nil || string(resp.Body) != "/second" {
		t.Fatalf("second request: %v %v", resp, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := srv.Accepted(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestDroppedConnectionFailsInFlightAndRedials: the server closes the connection with a request in
// flight: it fails as net/http's would, and the next request dials a new connection.
func TestDroppedConnectionFailsInFlightAndRedials(t *testing.T) {
	var first atomic.Bool
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			if first.CompareAndSwap(false, true) {
				return // closes with the request unanswered
			}
			rc.Respond(r.StreamID, 200, "text/plain", nil)
		}
	})
	c := scriptedClient(t, srv, Config{})
	_, err := c.Do(context.Background(), &Request{Method: "PATCH", Path: "/x", Body: []byte("{}")})
	if err == nil || !strings.HasSuffix(err.Error(), `Patch "`+srv.URL()+`/x": unexpected EOF`) {
		t.Fatalf("got %v, want net/http's unexpected EOF", err)
	}
	if _, err := c.Do(context.Background(), &Request{Path: "/y"}); err != nil {
		t.Fatal(err)
	}
	if n := srv.Accepted(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestUnknownAuthorityIsRefused: TLS verification is on.
func TestUnknownAuthorityIsRefused(t *testing.T) {
	c := goClient(t, goServer(t), Config{TLS: &tls.Config{}})
	_, err := c.Do(context.Background(), &Request{Path: "/x"})
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		t.Fatalf("got %v, want a certificate error", err)
	}
}

// TestForConfigCarriesCredentials: a rest.Config's bearer token reaches the server, and a request's
// own impersonation replaces the config's.
func TestForConfigCarriesCredentials(t *testing.T) {
	ts := goServer(t)
	rc := &rest.Config{Host: ts.URL, BearerToken: "secret", TLSClientConfig: rest.TLSClientConfig{CAData: certPEM(ts)},
		Impersonate: rest.ImpersonationConfig{UserName: "admin"}}
	cfg, err := ForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		header []Field
		want   string
	}{
		{nil, "GET /x 0 Bearer secret admin"},
		{[]Field{{"impersonate-user", "system:node:n1"}}, "GET /x 0 Bearer secret system:node:n1"},
	} {
		resp, err := c.Do(context.Background(), &Request{Path: "/x", Header: tc.header})
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Body) != tc.want {
			t.Errorf("server saw %q, want %q", resp.Body, tc.want)
		}
	}
	rc.Host = "http://127.0.0.1:1"
	if _, err := ForConfig(rc); err == nil {
		t.Error("a plain HTTP host was accepted")
	}
}

// TestRequestsDueTogetherShareAWrite: requests queued within the flush window leave in fewer writes
// than requests; none waits longer than the window for its write.
func TestRequestsDueTogetherShareAWrite(t *testing.T) {
	ts := goServer(t)
	var writes atomic.Int64
	cfg := Config{FlushWindow: MaxFlushWindow, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countingConn{nc, &writes}, err
	}}
	c := goClient(t, ts, cfg)
	if _, err := c.Do(context.Background(), &Request{Path: "/warm"}); err != nil {
		t.Fatal(err)
	}
	const n = 50
	before := writes.Load()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			if _, err := c.Do(context.Background(), &Request{Path: "/x"}); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	// Writes besides the requests' (WINDOW_UPDATEs, SETTINGS and PING acknowledgements) are few.
	if w := writes.Load() - before; w >= n/2 {
		t.Errorf("%d requests took %d writes", n, w)
	} else {
		t.Logf("%d requests took %d writes", n, w)
	}
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestTimeoutResetsTheStream: a request whose context ends fails with the context's error in a
// *url.Error, as net/http's does, and the connection serves the next one.
func TestTimeoutResetsTheStream(t *testing.T) {
	reset := make(chan struct{})
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		for {
			f, err := rc.ReadFrame()
			if err != nil {
				return
			}
			if rst, ok := f.(*http2.RSTStreamFrame); ok && rst.StreamID == r.StreamID && rst.ErrCode == http2.ErrCodeCancel {
				close(reset)
				break
			}
		}
		if r, ok = rc.Request(); ok {
			rc.Respond(r.StreamID, 200, "text/plain", nil)
		}
		rc.Request()
	})
	c := scriptedClient(t, srv, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Do(ctx, &Request{Method: "PUT", Path: "/x"})
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a timeout *url.Error", err)
	}
	<-reset
	if _, err := c.Do(context.Background(), &Request{Path: "/y"}); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string { return strconvItoa(i) }
