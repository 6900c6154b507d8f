package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// TestHungDialHoldsUpNoOtherRequest: with the server's one stream a connection taken, a request
// dials a second connection, and the dial hangs. A request that finds a free stream on the first
// connection meanwhile is sent and answered at once, not after the hung dial.
func TestHungDialHoldsUpNoOtherRequest(t *testing.T) {
	held := make(chan struct{})
	release := make(chan struct{})
	srv := h2script.New(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 1}}, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			if r.Get(":path") == "/hold" {
				close(held)
				<-release
			}
			rc.Respond(r.StreamID, 200, "text/plain", nil)
		}
	})
	var dials atomic.Int32
	hung, unhang := make(chan struct{}), make(chan struct{})
	var dialReturned atomic.Bool
	c := scriptedClient(t, srv, Config{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 2 {
			close(hung)
			select {
			case <-unhang:
			case <-ctx.Done():
			}
			defer dialReturned.Store(true)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}})
	if _, err := c.Do(context.Background(), &Request{Path: "/first"}); err != nil { // the SETTINGS are in
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() {
		_, err := c.Do(context.Background(), &Request{Path: "/hold"})
		errs <- err
	}()
	<-held
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := c.Do(ctx, &Request{Path: "/dials"})
		errs <- err
	}()
	<-hung
	close(release)
	if err := <-errs; err != nil { // /hold's answer: the first connection's stream is free again
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Do(ctx, &Request{Path: "/free"})
	if dialReturned.Load() {
		t.Errorf("a request with a free stream waited for a hung dial it did not need (and then got %v)", err)
	} else if err != nil {
		t.Fatal(err)
	}
	close(unhang)
	if err := <-errs; err != nil && !dialReturned.Load() {
		t.Errorf("the request that dialled: %v", err)
	}
}

// TestTLSHandshakeTimesOut: a server that accepts the TCP connection and never answers the TLS
// handshake fails the request with net/http's handshake timeout, not the request's own.
func TestTLSHandshakeTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted sync.WaitGroup
	accepted.Go(func() {
		nc, err := ln.Accept()
		if err == nil {
			defer nc.Close()
			_, _ = io.Copy(io.Discard, nc) // until the client gives up
		}
	})
	defer accepted.Wait()
	defer ln.Close()
	c, err := New(Config{Host: "https://" + ln.Addr().String(), handshakeTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.Do(ctx, &Request{Path: "/x"})
	if err == nil || !strings.HasSuffix(err.Error(), "net/http: TLS handshake timeout") {
		t.Fatalf("got %v, want the TLS handshake timeout", err)
	}
}

// TestRefusedRequestsBackOff: a request or a watch the server refuses every time is sent again at
// once, then after 1 s, 2 s, ... with up to 10% jitter, as net/http does, and not seven times at
// once.
func TestRefusedRequestsBackOff(t *testing.T) {
	t.Run("Do", func(t *testing.T) {
		refusedBackOff(t, func(c *Client, ctx context.Context, done chan<- error) {
			go func() {
				_, err := c.Do(ctx, &Request{Path: "/x"})
				done <- err
			}()
		})
	})
	t.Run("Stream", func(t *testing.T) {
		refusedBackOff(t, func(c *Client, ctx context.Context, done chan<- error) {
			c.Stream(ctx, &Request{Path: "/x"}, Handlers{OnData: func([]byte) error { return nil }, OnEnd: func(err error) { done <- err }})
		})
	})
}

func refusedBackOff(t *testing.T, send func(*Client, context.Context, chan<- error)) {
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	seen := make(chan time.Time, 16)
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			seen <- fc.Now()
			rc.Reset(r.StreamID, http2.ErrCodeRefusedStream)
		}
	})
	c := scriptedClient(t, srv, Config{Clock: fc, ReadIdleTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	send(c, ctx, done)
	t0 := fc.Now()
	<-seen
	<-seen // the first retry goes at once
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		untilWaiting(t, fc, 2, done) // the connection's health check and the backoff
		select {
		case <-seen:
			t.Fatalf("a retry went before its %v backoff", wait)
		default:
		}
		fc.Step(wait * 11 / 10)
		at := <-seen
		if d := at.Sub(t0); d < wait || d > wait*11/10 {
			t.Errorf("retry after %v of backoff, want %v to %v", d, wait, wait*11/10)
		}
		t0 = at
	}
	untilWaiting(t, fc, 2, done) // the connection's health check and the backoff
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the context's end during the backoff", err)
	}
}

// untilWaiting waits until n timers wait on fc, and fails if the request ends first.
func untilWaiting(t *testing.T, fc *testingclock.FakeClock, n int, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for fc.Waiters() < n {
		select {
		case err := <-done:
			t.Fatalf("the request ended (%v) while %d timers waited on the clock, want %d", err, fc.Waiters(), n)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d timers wait on the clock after 10 s, want %d", fc.Waiters(), n)
		}
		time.Sleep(time.Millisecond) // no event says a timer was made
	}
}

// TestServerTakingNoStreamsIsDialledOnce: a server whose SETTINGS say MAX_CONCURRENT_STREAMS 0, and
// which refuses what came before them, is dialled once by 20 requests at once: they wait for it to
// take streams (here until their timeout), rather than dialling a connection each, again and again.
func TestServerTakingNoStreamsIsDialledOnce(t *testing.T) {
	srv := h2script.New(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 0}}, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			rc.Reset(r.StreamID, http2.ErrCodeRefusedStream)
		}
	})
	c := scriptedClient(t, srv, Config{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if _, err := c.Do(ctx, &Request{Path: "/x"}); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want the request's timeout", err)
			}
		})
	}
	wg.Wait()
	if n := srv.Accepted(); n != 1 {
		t.Errorf("%d connections dialled, want 1", n)
	}
}

// TestConnectionsAreCapped: past MaxConnections, a request that finds every stream taken waits
// for one to end instead of dialling.
func TestConnectionsAreCapped(t *testing.T) {
	held := make(chan struct{}, 3)
	release := make(chan struct{})
	srv := h2script.New(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 1}}, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			if r.Get(":path") == "/hold" {
				held <- struct{}{}
				<-release
			}
			rc.Respond(r.StreamID, 200, "text/plain", nil)
		}
	})
	c := scriptedClient(t, srv, Config{MaxConnections: 2})
	if _, err := c.Do(context.Background(), &Request{Path: "/first"}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	for range 2 {
		go func() {
			_, err := c.Do(context.Background(), &Request{Path: "/hold"})
			errs <- err
		}()
	}
	<-held
	<-held
	go func() {
		_, err := c.Do(context.Background(), &Request{Path: "/waits"})
		errs <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); c.waiting.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the third request never waited for a stream")
		}
		time.Sleep(time.Millisecond) // no event says it waits
	}
	close(release)
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := srv.Accepted(); n != 2 {
		t.Errorf("%d connections dialled, want 2", n)
	}
}
