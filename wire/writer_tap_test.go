package wire

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// writerTap takes a writer's events (Config.observe) one at a time and keeps the writer waiting in
// each until the test releases it: a test that steps the writer's clock only between next and
// release knows what the writer holds and where its timer is, with no race against it.
type writerTap struct {
	t      *testing.T
	events chan writerEvent
	resume chan struct{}
	stop   chan struct{}
}

// tappedClient returns a Client of a scripted server whose writers report to a writerTap.
func tappedClient(t *testing.T, s *h2script.Server, cfg Config) (*Client, *writerTap) {
	t.Helper()
	tap := &writerTap{t: t, events: make(chan writerEvent), resume: make(chan struct{}), stop: make(chan struct{})}
	cfg.observe = tap.observe
	c := scriptedClient(t, s, cfg)
	t.Cleanup(func() { close(tap.stop) }) // before the client's Close: a writer waiting in observe ends
	return c, tap
}

func (tp *writerTap) observe(ev writerEvent) {
	select {
	case tp.events <- ev:
	case <-tp.stop:
		return
	}
	select {
	case <-tp.resume:
	case <-tp.stop:
	}
}

// tapTimeout bounds a wait for the writer: reached, the writer is stuck, and the test has failed.
const tapTimeout = 20 * time.Second

// next returns the writer's next event; the writer waits for release.
func (tp *writerTap) next() writerEvent {
	tp.t.Helper()
	select {
	case ev := <-tp.events:
		return ev
	case <-time.After(tapTimeout):
		tp.t.Fatal("the writer reported nothing more")
		return writerEvent{}
	}
}

// release lets the writer go on from the event next returned.
func (tp *writerTap) release() { tp.resume <- struct{}{} }

// nextOr returns the writer's next event, or ok false when c is ready first (its value in v).
func nextOr[T any](tp *writerTap, c <-chan T) (ev writerEvent, v T, ok bool) {
	tp.t.Helper()
	select {
	case ev := <-tp.events:
		return ev, v, true
	case v := <-c:
		return writerEvent{}, v, false
	case <-time.After(tapTimeout):
		tp.t.Fatal("neither the writer nor the awaited answer said anything more")
		return writerEvent{}, v, false
	}
}

// untilFlushed steps fc to the end of each window the writer holds, from ev, until it flushes; it
// returns the flush, the writer waiting for release.
func (tp *writerTap) untilFlushed(fc *testingclock.FakeClock, window time.Duration, ev writerEvent) writerEvent {
	tp.t.Helper()
	for !ev.held.IsZero() {
		if end := ev.held.Add(window); end.After(fc.Now()) {
			fc.SetTime(end)
		}
		tp.release()
		ev = tp.next()
	}
	return ev
}
