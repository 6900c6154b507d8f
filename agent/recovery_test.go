package agent

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recoveryLog records what agents tell a RecoveryRecorder.
type recoveryLog struct {
	h  *harness
	mu sync.Mutex
	s  []string
}

func (*recoveryLog) Request(Request)            {}
func (*recoveryLog) Heartbeat(string, error)    {}
func (*recoveryLog) LeaseRenewed(time.Duration) {}
func (l *recoveryLog) Disrupted(node, cause string, at time.Time) {
	l.add(fmt.Sprintf("%v disrupted %s %s", at.Sub(t0), node, cause))
}
func (l *recoveryLog) Recovered(node string, at time.Time) {
	l.add(fmt.Sprintf("%v recovered %s", at.Sub(t0), node))
}

func (l *recoveryLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s = append(l.s, s)
}

func (l *recoveryLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.Join(l.s, "; ")
	l.s = nil
	return s
}

// syncAll answers each watch with the end of its initial events.
func syncAll(ws []*fakeWatch) {
	for _, fw := range ws {
		fw.h.Opened(nil)
		fw.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "100", InitialEventsEnd: true})
	}
}

// A restarted kubelet of the kubelet footprint drops everything its old process had: its watches
// list again from no resource version, and it re-runs the startup sequence a kubelet runs after a
// restart, against a Node, Lease and CSINode that exist. It is back once it reported Ready and every
// watch has its initial list.
func TestKubeletRestartSequence(t *testing.T) {
	log := &recoveryLog{}
	h := newHarness(t, func(c *Config) { c.Footprint = FootprintKubelet; c.Recorder = log })
	log.h = h
	w := &fakeWatcher{h: h}
	a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: h.client.CoordinationV1(), Storage: h.client.StorageV1(), Watches: w},
		"fakelet-00001", 1, "")
	a.Start(h.ctx)
	h.advance(time.Second)
	syncAll(w.take())
	h.advance(30 * time.Second)
	if got, want := log.take(), "1s recovered fakelet-00001"; got != want {
		t.Fatalf("first start: %q, want %q", got, want)
	}
	h.take()

	a.Stop()
	a.Start(h.ctx)
	h.advance(31 * time.Second)
	ws := w.take()
	if len(ws) != 6 {
		t.Fatalf("the restart opened %d watches, want the kubelet's 6", len(ws))
	}
	for _, fw := range ws {
		q := fw.req.Query
		if q.Has("resourceVersion") || q.Get("sendInitialEvents") != "true" {
			t.Errorf("watch %s after a restart: want a streaming list with no resource version", fw.req)
		}
	}
	// The loops run on the scheduler's workers at once, so only each loop's own requests come in a
	// fixed order: the new lease controller GETs its Lease before renewing it; the CSI plugin finds
	// the Node and its CSINode; registration, 100 ms in, finds the Node (POST, 409, GET) and reports
	// its status at once, as a restart does whatever changed. Events: Starting at once, and the
	// conditions' and NodeAllocatableEnforced with the initial node, as each kubelet start records.
	var got []string
	byLoop := map[string][]string{}
	for _, c := range h.take() {
		got = append(got, fmt.Sprintf("%v %s %s", c.at-30*time.Second, c.verb, c.res))
		loop := c.res
		if c.res == "nodes" || c.res == "nodes/status" {
			loop = "registration"
		}
		byLoop[loop] = append(byLoop[loop], c.verb+" "+c.res)
	}
	sort.Strings(got)
	want := []string{
		"0s create events", "0s get csinodes", "0s get csinodes", "0s get leases", "0s get nodes", "0s update leases",
		"100ms create events", "100ms create events", "100ms create events", "100ms create events", "100ms create events",
		"100ms create nodes", "100ms get nodes", "100ms patch nodes/status",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("restart sent\n%s\nwant\n%s", strings.Join(got, "; "), strings.Join(want, "; "))
	}
	for loop, want := range map[string]string{
		"leases":       "get leases; update leases",
		"registration": "get nodes; create nodes; get nodes; patch nodes/status",
	} {
		if got := strings.Join(byLoop[loop], "; "); got != want {
			t.Errorf("%s: %s, want %s", loop, got, want)
		}
	}
	if got, want := log.take(), "30s disrupted fakelet-00001 process"; got != want {
		t.Errorf("before the watches have their lists: %q, want %q", got, want)
	}
	syncAll(ws[:5])
	h.advance(32 * time.Second)
	if got := log.take(); got != "" {
		t.Errorf("with one watch still listing: %q, want nothing", got)
	}
	syncAll(ws[5:])
	if got, want := log.take(), "32s recovered fakelet-00001"; got != want {
		t.Errorf("with every watch back: %q, want %q", got, want)
	}

	// A server that breaks a watch (an apiserver restart) disrupts the kubelet until the reflector
	// has listed again.
	ws[2].h.Ended(syscall.ECONNRESET)
	if got, want := log.take(), "32s disrupted fakelet-00001 watch"; got != want {
		t.Errorf("a broken watch: %q, want %q", got, want)
	}
	h.advance(40 * time.Second)
	relist := only(t, w)
	if relist.req.Query.Get("sendInitialEvents") != "true" {
		t.Errorf("after a broken stream the reflector watches with %s, want a streaming list", relist.req)
	}
	syncAll([]*fakeWatch{relist})
	if got, want := log.take(), "40s recovered fakelet-00001"; got != want {
		t.Errorf("relisted: %q, want %q", got, want)
	}
}

// In the heartbeat footprint a kubelet is back with its first Ready report.
func TestHeartbeatRestartRecovers(t *testing.T) {
	log := &recoveryLog{}
	h := newHarness(t, func(c *Config) { c.Recorder = JoinRecorders(log, &countingRecorder{}) })
	a := h.agent("fakelet-00002", 2)
	a.Start(h.ctx)
	h.advance(20 * time.Second)
	a.Stop()
	h.advance(25 * time.Second)
	a.Start(h.ctx)
	h.advance(26 * time.Second)
	// Registration's first try is 100 ms after the start; the status PATCH follows at once.
	if got, want := log.take(), "100ms recovered fakelet-00002; 20s disrupted fakelet-00002 process; 25.1s recovered fakelet-00002"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// The fleet stops its agents after its context ended: the end of the run is no kubelet falling behind.
func TestTheFleetsEndIsNoDisruption(t *testing.T) {
	log := &recoveryLog{}
	h := newHarness(t, func(c *Config) { c.Recorder = log })
	a := h.agent("fakelet-00003", 3)
	ctx, cancel := context.WithCancel(h.ctx)
	a.Start(ctx)
	h.advance(time.Second)
	cancel()
	a.Stop()
	if got, want := log.take(), "100ms recovered fakelet-00003"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
