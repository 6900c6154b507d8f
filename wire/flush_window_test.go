package wire

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// TestFlushWindowMovesNoSendByMoreThanTheWindow steps the writer's clock: a request queued on a
// connection idle for longer than the flush window leaves at once; one queued within the window of
// the last waits for company no longer than the window, one queued meanwhile leaves with it, and
// neither leaves before its time nor after the window. The clock moves only while the
// writer waits in its observer (writerTap), so the test knows what the writer holds at each step.
func TestFlushWindowMovesNoSendByMoreThanTheWindow(t *testing.T) {
	const window = MaxFlushWindow
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	arrived := make(chan time.Time, 3)
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			arrived <- fc.Now()
			rc.Respond(r.StreamID, 200, "text/plain", nil)
		}
	})
	c, tap := tappedClient(t, srv, Config{FlushWindow: window, Clock: fc})
	done := make(chan error, 3)
	send := func() {
		go func() {
			_, err := c.Do(context.Background(), &Request{Path: "/x"})
			done <- err
		}()
	}
	// answered lets the writer go on from each event until a request's answer is in.
	answered := func() {
		t.Helper()
		for {
			_, err, isEvent := nextOr(tap, done)
			if !isEvent {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			tap.release()
		}
	}

	// The first request dials, and SETTINGS go both ways. The clock steps to the end of each window
	// the writer holds, and the test sees its flush, until the answer is in. A second request,
	// queued once the first is answered, comes after whatever the server's SETTINGS had the reader
	// queue: once it is answered, the writer has nothing left and runs only when the test lets it.
	for range 2 {
		send()
		for {
			ev, err, isEvent := nextOr(tap, done)
			if !isEvent {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
			tap.untilFlushed(fc, window, ev)
			tap.release()
		}
		<-arrived
	}
	fc.Step(2 * window) // the connection has been idle for longer than a window
	t0 := fc.Now()

	// covering waits for the writer's event that covers the connection's nth request, letting it
	// go on from earlier ones (a flush of a request answered before it reported the flush).
	covering := func(n uint32) writerEvent {
		t.Helper()
		for {
			ev := tap.next()
			if ev.last >= 2*n-1 {
				return ev
			}
			tap.release()
		}
	}
	// holds waits until the writer holds the connection's nth request on its timer, and steps the
	// clock by d before the writer goes on.
	holds := func(n uint32, d time.Duration) {
		t.Helper()
		if ev := covering(n); ev.held.IsZero() {
			tap.release()
			t.Fatalf("the writer flushed request %d without holding it for company", n)
		}
		fc.Step(d)
		tap.release()
	}

	send() // at 0, alone: nothing came in the window before it, so it leaves at once
	if ev := covering(3); !ev.held.IsZero() {
		tap.release()
		t.Fatalf("the writer held request 3, which came alone, on its timer")
	}
	tap.release()
	answered()
	fc.Step(window / 4)
	send() // at a quarter of the window after the last: held for company
	holds(4, window/2)
	send() // at three quarters: joins its write
	holds(5, window/2)
	answered()
	answered()
	for i, r := range []struct{ sent, arrived time.Duration }{{0, 0}, {window / 4, window/4 + window}, {3 * window / 4, window/4 + window}} {
		at := (<-arrived).Sub(t0)
		if at < r.sent || at-r.sent > window {
			t.Errorf("request %d, queued at %v, reached the server at %v: moved by more than the %v window", i, r.sent, at, window)
		}
		if at != r.arrived {
			t.Errorf("request %d, queued at %v, reached the server at %v, want %v", i, r.sent, at, r.arrived)
		}
	}
}
