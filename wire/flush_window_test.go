package wire

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// TestFlushWindowMovesNoSendByMoreThanTheWindow steps the writer's clock: a request queued on an
// idle connection waits for company no longer than the flush window, one queued meanwhile leaves
// with it, and neither leaves before its time nor after the window. The clock moves only while the
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
	// the writer holds, and the test sees its flush, until the answer is in: then what the writer
	// holds, if anything, it wrote at the clock's present time.
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
	t0 := fc.Now()

	// holds waits until the writer holds the connection's nth request on its timer, and steps the
	// clock by d before the writer goes on.
	holds := func(n uint32, d time.Duration) {
		t.Helper()
		for {
			ev := tap.next()
			if ev.last >= 2*n-1 {
				if ev.held.IsZero() {
					tap.release()
					t.Fatalf("the writer flushed request %d without holding it for company", n)
				}
				fc.Step(d)
				tap.release()
				return
			}
			tap.release()
		}
	}
	send() // at 0
	holds(2, window/2)
	send() // at half the window: joins the first one's write
	holds(3, window/2)
	answered()
	answered()
	for i, sentAt := range []time.Duration{0, window / 2} {
		at := (<-arrived).Sub(t0)
		if at < sentAt || at-sentAt > window {
			t.Errorf("request %d, queued at %v, reached the server at %v: moved by more than the %v window", i, sentAt, at, window)
		}
		if at != window {
			t.Errorf("request %d reached the server at %v, not at the end of the window (%v)", i, at, window)
		}
	}
}
