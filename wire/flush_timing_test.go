package wire

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// TestPacedRenewalsKeepTheirTimingThroughTheFlushWindow sends a paced fleet's lease renewals through one
// connection, once flushing as soon as the queue is empty (today's exact timing) and once with
// the largest flush window, on a fake clock against a scripted server that answers each request
// with the time it arrived. Each agent renews as the kubelet's lease controller does: every 10 s
// plus up to 4% jitter, counted from the end of its last renewal. Held: exactly, every request
// arrives when it is due; with the window, every request arrives within the window of when it was
// due, and the quantiles of the agents' renewal intervals move by no more than the window.
// go test -v -run TestPacedRenewalsKeepTheirTimingThroughTheFlushWindow ./wire prints the two distributions.
func TestPacedRenewalsKeepTheirTimingThroughTheFlushWindow(t *testing.T) {
	agents, renewals := 1000, 7
	if testing.Short() {
		agents, renewals = 200, 4
	}
	exact, exactWrites := pacedFleet(t, 0, agents, renewals)
	windowed, windowWrites := pacedFleet(t, MaxFlushWindow, agents, renewals)

	for _, r := range exact {
		if !r.arrived.Equal(r.due) {
			t.Fatalf("flushing at once, agent %d's renewal due at %v arrived %v later", r.agent, r.due, r.arrived.Sub(r.due))
		}
	}
	var delays []time.Duration
	for _, r := range windowed {
		d := r.arrived.Sub(r.due)
		if d < 0 || d > MaxFlushWindow {
			t.Errorf("with the %v window, agent %d's renewal due at %v arrived %v after it", MaxFlushWindow, r.agent, r.due, d)
		}
		delays = append(delays, d)
	}
	before, after := renewalIntervals(exact, agents), renewalIntervals(windowed, agents)
	if len(before) != len(after) || len(before) != agents*(renewals-1) {
		t.Fatalf("%d and %d renewal intervals, want %d each", len(before), len(after), agents*(renewals-1))
	}
	t.Logf("%d agents, %d renewals each; writes per request: %.3f at once, %.3f with the %v window",
		agents, renewals, float64(exactWrites)/float64(len(exact)), float64(windowWrites)/float64(len(windowed)), MaxFlushWindow)
	slices.Sort(delays)
	t.Logf("arrival after due with the window: median %v, p99 %v, max %v; at once: 0 for every request",
		quantile(delays, 0.5), quantile(delays, 0.99), delays[len(delays)-1])
	t.Logf("%-9s %-16s %-16s %s", "interval", "at once", "window", "moved")
	for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 1} {
		b, a := quantile(before, q), quantile(after, q)
		t.Logf("%-9s %-16v %-16v %v", fmt.Sprintf("q%g", q), b, a, a-b)
		if a-b < -MaxFlushWindow || a-b > MaxFlushWindow {
			t.Errorf("the q%g renewal interval moved from %v to %v: by more than the %v window", q, b, a, MaxFlushWindow)
		}
	}
}

// renewal is one lease renewal of a paced fleet: its agent, when it was due (queued), and when it
// reached the server.
type renewal struct {
	agent        int
	due, arrived time.Time
}

// The kubelet's lease renewal: every renewInterval plus up to renewJitter of it, counted from the
// end of the last renewal (wait.JitterUntil, sliding).
const (
	renewInterval = 10 * time.Second
	renewJitter   = 0.04
)

// pacedFleet sends renewals renewals of each of agents agents over one connection with the given
// flush window and returns them in the order they were due, with the number of flushes. The test
// is the fleet's scheduler: it moves the fake clock to the next due renewal or the end of the
// writer's window, whichever comes first, only while the writer waits in its observer, and queues
// each renewal when it is due. The requests have no body, so that the server sends no WINDOW_UPDATE
// that would wake the writer when the test did not choose to. Each agent's start and jitter come
// from a random sequence of its own, the same in every run.
func pacedFleet(t *testing.T, window time.Duration, agents, renewals int) ([]renewal, int) {
	t.Helper()
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			rc.Respond(r.StreamID, 200, "text/plain", []byte(strconv.FormatInt(fc.Now().UnixNano(), 10)))
		}
	})
	// The health check's PING would wake the writer too: a long idle timeout keeps it out of the run.
	c, tap := tappedClient(t, srv, Config{FlushWindow: window, ReadIdleTimeout: time.Hour, Clock: fc})

	type answer struct {
		r   renewal
		err error
	}
	answers := make(chan answer, agents+1)
	sent := 0 // requests queued so far: the nth has stream ID 2n-1
	send := func(r renewal) {
		sent++
		go func() {
			resp, err := c.Do(context.Background(), &Request{Method: "PUT", Path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/fakelet-" + strconv.Itoa(r.agent)})
			if err == nil {
				ns, perr := strconv.ParseInt(string(resp.Body), 10, 64)
				r.arrived, err = time.Unix(0, ns).In(time.UTC), perr
			}
			answers <- answer{r, err}
		}()
	}

	rngs := make([]*rand.Rand, agents)
	next := make([]time.Time, agents) // each agent's next due renewal; zero: done
	left := make([]int, agents)
	var done []renewal
	answered := 0
	// flushed waits for the answers of every request the writer has flushed, up to stream last,
	// and schedules each agent's next renewal from the end of its last one.
	flushed := func(last uint32) {
		t.Helper()
		for answered < int(last+1)/2 {
			var a answer
			select {
			case a = <-answers:
			case <-time.After(tapTimeout):
				t.Fatalf("no answer to a flushed request: %d of %d answered", answered, (last+1)/2)
			}
			answered++
			if a.err != nil {
				t.Fatal(a.err)
			}
			if a.r.agent < 0 {
				continue // the warm-up's
			}
			done = append(done, a.r)
			if left[a.r.agent]--; left[a.r.agent] > 0 {
				next[a.r.agent] = a.r.arrived.Add(renewInterval + time.Duration(rngs[a.r.agent].Float64()*renewJitter*float64(renewInterval)))
			}
		}
	}
	// covered waits for the writer's event that covers the latest request queued, letting it go on
	// from earlier ones (a SETTINGS acknowledgement held on its own).
	covered := func() writerEvent {
		t.Helper()
		for {
			ev := tap.next()
			if ev.last >= uint32(2*sent-1) {
				return ev
			}
			tap.release()
		}
	}
	untilFlushed := func(ev writerEvent) writerEvent {
		t.Helper()
		return tap.untilFlushed(fc, window, ev)
	}

	// Warm-up: the first request dials, and SETTINGS go both ways. A second one, queued once the
	// first is answered, comes after whatever the server's SETTINGS had the reader queue: once it is
	// flushed, the writer has nothing left and runs only when the test lets it go.
	send(renewal{agent: -1})
	ev := untilFlushed(covered())
	flushed(ev.last)
	tap.release()
	send(renewal{agent: -1})
	ev = untilFlushed(covered())
	flushed(ev.last)

	start := fc.Now()
	for a := range agents {
		rngs[a] = rand.New(rand.NewPCG(1, uint64(a)))
		next[a] = start.Add(time.Duration(rngs[a].Float64() * float64(renewInterval)))
		left[a] = renewals
	}
	writes := 0
	for {
		// The writer waits in the observer at ev: holding frames since ev.held, or having flushed.
		due := -1
		for a, at := range next {
			if !at.IsZero() && (due < 0 || at.Before(next[due])) {
				due = a
			}
		}
		if !ev.held.IsZero() && (due < 0 || !next[due].Before(ev.held.Add(window))) {
			// The window ends first (or as a renewal falls due: what it holds leaves first).
			ev = untilFlushed(ev)
			writes++
			flushed(ev.last)
			continue
		}
		if due < 0 {
			break
		}
		at := next[due]
		next[due] = time.Time{}
		fc.SetTime(at)
		send(renewal{agent: due, due: at})
		tap.release()
		if ev = covered(); ev.held.IsZero() {
			writes++
			flushed(ev.last)
		}
	}
	tap.release()
	slices.SortFunc(done, func(a, b renewal) int { return a.due.Compare(b.due) })
	return done, writes
}

// renewalIntervals is the time between each agent's consecutive renewals' arrivals.
func renewalIntervals(rs []renewal, agents int) []time.Duration {
	last := make([]time.Time, agents)
	var out []time.Duration
	for _, r := range rs {
		if !last[r.agent].IsZero() {
			out = append(out, r.arrived.Sub(last[r.agent]))
		}
		last[r.agent] = r.arrived
	}
	slices.Sort(out)
	return out
}

// quantile is the q quantile of sorted ds, the nearest rank's.
func quantile(ds []time.Duration, q float64) time.Duration {
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}
