package wire

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// TestSilentServerIsDetected: a server that stops answering anything, PINGs included, fails the
// requests waiting on it with net/http's "client connection lost" once the health check's PING
// goes unanswered, long before their own timeout, and the next request dials again. The health
// check runs on the Client's clock: the PING goes once the connection has read nothing for
// ReadIdleTimeout (30 s), and the connection fails PingTimeout (15 s) later, not before.
func TestSilentServerIsDetected(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	var first atomic.Bool
	got, pinged := make(chan struct{}), make(chan time.Time, 1)
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		if first.CompareAndSwap(false, true) {
			if r, ok := rc.Request(); ok {
				rc.Respond(r.StreamID, 200, "text/plain", nil)
			}
			rc.Request()
			close(got)
			for { // reads on, answers nothing
				f, err := rc.ReadFrame()
				if err != nil {
					return
				}
				if _, ok := f.(*http2.PingFrame); ok {
					pinged <- fc.Now()
				}
			}
		}
		answerAll(rc)
	})
	c := scriptedClient(t, srv, Config{Clock: fc})
	t0 := fc.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Its answer comes after every frame the server sent before: once it is read, the steps below
	// find nothing read since t0.
	if _, err := c.Do(ctx, &Request{Path: "/warm"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, &Request{Path: "/x"})
		done <- err
	}()
	<-got
	for range 2 { // at 15 s the connection is not idle yet; at 30 s it is: the PING goes
		untilWaiting(t, fc, 1, done)
		untilWritten(t, c)
		fc.Step(defaultPingTimeout)
	}
	select {
	case at := <-pinged:
		if d := at.Sub(t0); d != defaultReadIdleTimeout {
			t.Errorf("the PING went after %v, want %v", d, defaultReadIdleTimeout)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no PING after 30 s of reading nothing")
	}
	untilWaiting(t, fc, 1, done) // the request still waits, for the PING's answer
	untilWritten(t, c)
	fc.Step(defaultPingTimeout)
	if err := <-done; err == nil || !strings.HasSuffix(err.Error(), "http2: client connection lost") {
		t.Fatalf("got %v, want the connection lost", err)
	}
	if _, err := c.Do(ctx, &Request{Path: "/y"}); err != nil {
		t.Fatal(err)
	}
}

// TestCredentialsAreReadAgainAfterAuthRefresh: a connection's writer reads the credentials once
// and again only when AuthRefresh has passed on the Client's clock.
func TestCredentialsAreReadAgainAfterAuthRefresh(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	srv := h2script.New(t, nil, answerAll)
	var reads atomic.Int32
	auth := func() ([]Field, error) {
		reads.Add(1)
		return []Field{{Name: "authorization", Value: "Bearer t"}}, nil
	}
	c := scriptedClient(t, srv, Config{Clock: fc, Auth: auth, ReadIdleTimeout: time.Hour, PingTimeout: time.Hour})
	for _, step := range []struct {
		after time.Duration
		reads int32
	}{{0, 1}, {AuthRefresh - time.Second, 1}, {time.Second, 2}, {time.Second, 2}} {
		fc.Step(step.after)
		if _, err := c.Do(context.Background(), &Request{Path: "/x"}); err != nil {
			t.Fatal(err)
		}
		if n := reads.Load(); n != step.reads {
			t.Errorf("%d reads of the credentials after %v more, want %d", n, step.after, step.reads)
		}
	}
}

// untilWritten waits until c's writers wait for work: a step of the clock while one writes would
// find it stuck on its write.
func untilWritten(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		conns := c.conns
		c.mu.Unlock()
		busy := 0
		for _, cn := range conns {
			if cn.batchFrom.Load() != 0 {
				busy++
			}
		}
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writers still on a batch after 10 s", busy)
		}
		time.Sleep(time.Millisecond) // no event says a writer is done
	}
}
