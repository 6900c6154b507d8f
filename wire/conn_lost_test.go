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

	"fakelet.dev/fakelet/internal/h2script"
)

// TestConnectionLostWhileStreamsOpenEndsEveryOne: the server closes its first connection as soon
// as it has read one request's HEADERS, while 50 requests and watches are being queued on it, as an
// apiserver restarting does. Every one of them ends within 2 s: those written before the close fail
// with the lost connection's error (its read's or its write's), as net/http's do, and those not yet written are sent again on
// a new connection and answered; each watch's OnEnd is called exactly once. None is left to its own
// timeout, or, for a watch, forever. The rounds give the close many moments to land in.
func TestConnectionLostWhileStreamsOpenEndsEveryOne(t *testing.T) {
	for round := range 100 {
		connectionLostRound(t, round)
	}
}

func connectionLostRound(t *testing.T, round int) {
	var first atomic.Bool
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		if first.CompareAndSwap(false, true) {
			rc.Request()
			return // closes the connection
		}
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			rc.Respond(r.StreamID, 200, "text/plain", []byte("ok"))
		}
	})
	c := scriptedClient(t, srv, Config{})
	defer c.Close()
	const n = 50
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the heartbeats' timeout
	defer cancel()
	var ended sync.WaitGroup
	var ends [n]atomic.Int32
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		ended.Add(1)
		if i%2 == 0 {
			go func() {
				defer ended.Done()
				<-start
				_, errs[i] = c.Do(ctx, &Request{Path: "/do/" + itoa(i)})
			}()
			continue
		}
		go func() {
			<-start
			c.Stream(ctx, &Request{Path: "/watch/" + itoa(i)}, Handlers{
				OnData: func([]byte) error { return nil },
				OnEnd: func(err error) {
					if ends[i].Add(1) == 1 {
						errs[i] = err
						ended.Done()
					}
				},
			})
		}()
	}
	close(start)
	all := make(chan struct{})
	go func() { ended.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(2 * time.Second):
		t.Fatalf("round %d: not every request and watch had ended 2 s after the connection was lost", round)
	}
	for i, err := range errs {
		var op *net.OpError
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &op) {
			t.Errorf("round %d: request %d failed with %v, want the lost connection's error (unexpected EOF, or its write's)", round, i, err)
		}
	}
	for i := range ends {
		if i%2 == 1 {
			if k := ends[i].Load(); k != 1 {
				t.Errorf("round %d: watch %d's OnEnd called %d times", round, i, k)
			}
		}
	}
}

// TestConnectionLostUnderTheWriterSendsItsBatchAgain: the writer has taken a batch of requests
// from its queue and is stuck writing the first one's body to a full socket when the server drops
// the connection. The rest of the batch, never written, goes again on a new connection.
func TestConnectionLostUnderTheWriterSendsItsBatchAgain(t *testing.T) {
	var first atomic.Bool
	drop := make(chan struct{})
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		if first.CompareAndSwap(false, true) {
			if r, ok := rc.Request(); ok {
				rc.Respond(r.StreamID, 200, "text/plain", nil)
			}
			<-drop
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
	var dialer stallingDialer
	c := scriptedClient(t, srv, Config{Dial: dialer.dial})
	if _, err := c.Do(context.Background(), &Request{Path: "/warm"}); err != nil {
		t.Fatal(err)
	}
	sock := dialer.conn(0)
	sock.stall()
	const n = 10
	errs := make(chan error, n+2)
	watch := func(req *Request) {
		c.Stream(context.Background(), req, Handlers{OnData: func([]byte) error { return nil }, OnEnd: func(err error) { errs <- err }})
	}
	watch(&Request{Path: "/a"})
	sock.blocked(t) // the writer is stuck flushing /a (or what came before it)
	watch(&Request{Method: "PUT", Path: "/big", Body: make([]byte, 64<<10)})
	for i := range n {
		watch(&Request{Path: "/" + itoa(i)})
	}
	sock.pass(1)
	sock.blocked(t) // the writer took the rest as one batch, and is stuck in /big's body
	close(drop)
	timeout := time.After(5 * time.Second)
	for range n + 2 {
		select {
		case err := <-errs:
			if err != nil && !strings.Contains(err.Error(), "/a") && !strings.Contains(err.Error(), "/big") {
				t.Errorf("a request the writer never wrote failed: %v", err)
			}
		case <-timeout:
			t.Fatal("the requests of the writer's batch were never sent again")
		}
	}
}

// TestRequestOnAConnectionFailedSinceItsReserveIsSentAgain: a request that reserved its place on a
// connection which then failed, before the request was queued, ends at once with an error that
// sends it again: the failure ended every stream the connection knew of, and nothing else would
// end this one.
func TestRequestOnAConnectionFailedSinceItsReserveIsSentAgain(t *testing.T) {
	srv := h2script.New(t, nil, answerAll)
	c := scriptedClient(t, srv, Config{})
	if _, err := c.Do(context.Background(), &Request{Path: "/warm"}); err != nil {
		t.Fatal(err)
	}
	cn, err := c.pick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cn.fail(io.ErrUnexpectedEOF) // as its reader would, between the reserve and the queueing
	s := &stream{cn: cn, req: &Request{Path: "/x"}, done: make(chan struct{})}
	cn.send(s)
	select {
	case <-s.done:
		if !isRetryable(s.err) {
			t.Errorf("ended with %v, want an error that sends it again", s.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the request queued on a failed connection never ended")
	}
}
