package agent

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// requestLog keeps every request an agent records.
type requestLog struct {
	mu   sync.Mutex
	reqs []Request
}

func (l *requestLog) Request(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
}
func (l *requestLog) Heartbeat(string, error)    {}
func (l *requestLog) LeaseRenewed(time.Duration) {}

// A tick's first request carries when the tick was due and fakelet's lag in sending it: with the
// scheduler coalescing timers to the end of each second, a renewal due at 10.2 s goes out at 11 s.
func TestSendLagIsFromTheTicksDueTime(t *testing.T) {
	log := &requestLog{}
	h := newHarness(t, func(c *Config) {
		c.Scheduler.Coalesce(time.Second)
		c.Recorder = log
	})
	a := h.agent("fakelet-00001", 1)
	a.Start(h.ctx)
	h.advance(0)
	h.advance(25 * time.Second)
	log.mu.Lock()
	defer log.mu.Unlock()
	type tick struct {
		req            string
		due, sent, lag time.Duration
	}
	var got []tick
	for _, r := range log.reqs {
		if r.Node != "fakelet-00001" {
			t.Errorf("request %s %s recorded for node %q", r.Verb, r.Resource, r.Node)
		}
		if r.Resource == "leases" {
			var due time.Duration
			if !r.Due.IsZero() {
				due = r.Due.Sub(t0)
			}
			got = append(got, tick{r.Verb, due, r.Sent.Sub(t0), r.SendLag})
		}
	}
	// The first tick runs at once, before the Node exists: a GET and no lease. The next is due
	// 10.2 s later and runs at 11 s (GET, then a POST that is not the tick's first request); the
	// renewal after it is due at 21.2 s and runs at 22 s.
	want := []tick{
		{"get", 0, 0, 0},
		{"get", 10200 * time.Millisecond, 11 * time.Second, 800 * time.Millisecond},
		{"create", 0, 11 * time.Second, 0},
		{"update", 21200 * time.Millisecond, 22 * time.Second, 800 * time.Millisecond},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lease requests (verb, due, sent, lag):\n got %v\nwant %v", got, want)
	}
}
