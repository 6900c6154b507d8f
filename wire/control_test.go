package wire

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// TestServerThatPingsAndNeverReadsIsFailed: a server that goes on sending PINGs while it reads
// nothing keeps the connection's reads fresh, so the health check's PING never goes; the writer,
// stuck on the full socket, fails the connection once it has been stuck for the ping timeout, and
// the request written to it fails, long before its own timeout. The ping timeout is on the Client's
// clock: the connection fails when the clock has moved 15 s with the writer stuck, not before.
func TestServerThatPingsAndNeverReadsIsFailed(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	stalled, stop := make(chan struct{}), make(chan struct{})
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		for range 2 {
			if r, ok := rc.Request(); ok {
				rc.Respond(r.StreamID, 200, "text/plain", nil)
			}
		}
		<-stalled
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				rc.Ping([8]byte{1})
			}
		}
	})
	defer close(stop)
	var dialer stallingDialer
	c := scriptedClient(t, srv, Config{Dial: dialer.dial, Clock: fc})
	// The writer must stick on the PUT itself: stuck on a frame queued before it (the SETTINGS
	// acknowledgement, written perhaps after the first answer came) or on a PING's acknowledgement,
	// it would leave the PUT unwritten in its queue, to go again on a new connection. The second
	// request is answered once the writer has written all that came before it.
	for range 2 {
		if _, err := c.Do(context.Background(), &Request{Path: "/warm"}); err != nil {
			t.Fatal(err)
		}
	}
	dialer.conn(0).stall()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, &Request{Method: "PUT", Path: "/x", Body: []byte("b")})
		done <- err
	}()
	dialer.conn(0).blocked(t)
	close(stalled)
	untilWaiting(t, fc, 1, done) // the health check
	fc.Step(defaultPingTimeout - time.Second)
	untilWaiting(t, fc, 1, done) // a second short of the timeout, the request still waits
	fc.Step(time.Second)
	var stuck errWriteStuck
	if err := <-done; !errors.As(err, &stuck) || stuck.d != defaultPingTimeout {
		t.Fatalf("got %v, want the connection failed for its writer stuck %v", err, defaultPingTimeout)
	}
}

// TestControlFramesPastTheirBoundFailTheConnection: a server that sends PINGs faster than it reads
// their acknowledgements fails the connection when maxQueuedControlFrames wait to be written,
// instead of growing the queue as long as it goes on; the watch on the connection ends with the
// error, which names the bound.
func TestControlFramesPastTheirBoundFailTheConnection(t *testing.T) {
	got, stalled, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		if _, ok := rc.Request(); !ok { // the watch, left open
			return
		}
		close(got)
		<-stalled
		for i := range 2 * maxQueuedControlFrames { // some go into the writer's buffer before it blocks
			rc.Ping([8]byte{byte(i)})
		}
		<-stop
	})
	defer close(stop)
	var dialer stallingDialer
	c := scriptedClient(t, srv, Config{Dial: dialer.dial})
	ended := make(chan error, 1)
	c.Stream(context.Background(), &Request{Path: "/watch"}, Handlers{
		OnData: func([]byte) error { return nil },
		OnEnd:  func(err error) { ended <- err },
	})
	<-got
	dialer.conn(0).stall()
	close(stalled)
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "more than 10000 PING and SETTINGS acknowledgements queued") {
			t.Fatalf("the watch ended with %v, want the bound on control frames", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection held on with the server's PINGs piling up")
	}
}

// TestWindowUpdatesQueueOneKick: WINDOW_UPDATEs the writer has not caught up with (here, stuck on a
// stalled socket) leave one kick in its queue, whatever their number: one kick writes what every
// grown window allows.
func TestWindowUpdatesQueueOneKick(t *testing.T) {
	got, stalled, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		if _, ok := rc.Request(); !ok {
			return
		}
		close(got)
		<-stalled
		rc.Ping([8]byte{'f', 'i', 'r', 's', 't'}) // its acknowledgement's write blocks the writer
		for i := range 20000 {
			rc.WindowUpdate(uint32(i%2), 1) // the connection's window and the watch's
		}
		rc.Ping([8]byte{'l', 'a', 's', 't'})
		<-stop
	})
	defer close(stop)
	var dialer stallingDialer
	c := scriptedClient(t, srv, Config{Dial: dialer.dial})
	c.Stream(context.Background(), &Request{Path: "/watch"}, Handlers{OnData: func([]byte) error { return nil }, OnEnd: func(error) {}})
	<-got
	dialer.conn(0).stall()
	close(stalled)
	c.mu.Lock()
	cn := c.conns[0]
	c.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) { // no event says the reader is done
		if time.Now().After(deadline) {
			t.Fatal("the last PING's acknowledgement was never queued")
		}
		cn.mu.Lock()
		kicks, last := 0, false
		for _, it := range cn.queue {
			if it.kind == itemKick {
				kicks++
			}
			last = last || it.kind == itemPingAck && it.ping == [8]byte{'l', 'a', 's', 't'}
		}
		n := len(cn.queue)
		cn.mu.Unlock()
		if last {
			if kicks > 1 {
				t.Errorf("%d kicks queued (%d items) for 20000 WINDOW_UPDATEs, want 1", kicks, n)
			}
			return
		}
	}
}
