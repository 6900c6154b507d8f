package agent

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/heartbeat"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// callerRand returns a Config.Rand that gives each of the agent's uses of randomness a sequence of
// its own (the status loop's tick jitter, its report delay, the lease loop's jitter, registration),
// so that a draw taken at another moment than before, but in the same order among its own kind,
// gets the same value: the timeline below is then exact without making every jitter the same.
func callerRand() func() float64 {
	var mu sync.Mutex
	streams := map[string]*rand.Rand{}
	return func() float64 {
		key := randCaller()
		mu.Lock()
		defer mu.Unlock()
		r := streams[key]
		if r == nil {
			h := fnv.New64a()
			h.Write([]byte(key))
			r = rand.New(rand.NewPCG(h.Sum64(), 14))
			streams[key] = r
		}
		return r.Float64()
	}
}

// randCaller names the use a draw is for, from the agent's frame that asked for it.
func randCaller() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		switch fn := f.Function; {
		case strings.Contains(fn, "statusLoop).tryUpdate"):
			return "report delay"
		case strings.Contains(fn, "statusLoop).register"):
			return "registration"
		case strings.Contains(fn, "statusLoop"):
			return "status tick"
		case strings.Contains(fn, "leaseLoop"):
			return "lease"
		}
		if !more {
			return "other"
		}
	}
}

// TestHeartbeatTimeline records every request of one node and when it was sent, through 40 minutes
// of faults and profile ops, against a golden file written before the status loop learnt to sleep
// between its reports: a change in what the node sends, or when, shows as a diff.
func TestHeartbeatTimeline(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Rand = callerRand() })
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	// A Node as another writer leaves it: the agent's kept view with one more label (no change to
	// the status) or with the node controller's Ready Unknown (a change the kubelet reports back).
	// Each is a version of its own, newer than the fake's, as a server's would be.
	observed := 0
	observe := func(change func(*corev1.Node)) {
		n := a.serverNode().DeepCopy()
		change(n)
		n.ResourceVersion = h.node(a.Name()).ResourceVersion + fmt.Sprint(observed)
		observed++
		a.ObserveNode(n)
	}
	steps := []struct {
		at time.Duration
		op func()
	}{
		{7 * time.Minute, func() { a.SetHealth(func(hl *Health) { hl.MemoryPressure = true }) }},
		{9*time.Minute + 3*time.Second, func() { a.SetHealth(func(hl *Health) { hl.MemoryPressure = false }) }},
		{9*time.Minute + 7*time.Second, func() { a.SetHealth(func(hl *Health) { hl.NotReady = true }) }},
		{9*time.Minute + 8*time.Second, func() { a.SetHealth(func(hl *Health) { hl.NotReady = false }) }},
		{11 * time.Minute, func() { observe(func(n *corev1.Node) { n.Labels = map[string]string{"team": "a"} }) }},
		{13*time.Minute + 500*time.Millisecond, func() {
			observe(func(n *corev1.Node) {
				n.Status.Conditions = append([]corev1.NodeCondition(nil), n.Status.Conditions...)
				for i := range n.Status.Conditions {
					if n.Status.Conditions[i].Type == corev1.NodeReady {
						n.Status.Conditions[i].Status = corev1.ConditionUnknown
					}
				}
			})
		}},
		{15 * time.Minute, func() { a.SetMode(heartbeat.ModeStatus) }},
		{16*time.Minute + 30*time.Second, func() { a.SetMode(heartbeat.ModeLease) }},
		{19 * time.Minute, func() { a.SetPartitioned(true) }},
		{20*time.Minute + 10*time.Second, func() { a.SetPartitioned(false) }},
		{22 * time.Minute, func() { a.SetLatency(2 * time.Second) }},
		{24 * time.Minute, func() { a.SetLatency(0) }},
		{26 * time.Minute, func() { a.Stop() }},
		{26*time.Minute + 20*time.Second, func() { a.Start(h.ctx) }},
		{33 * time.Minute, func() { a.SetHealth(func(hl *Health) { hl.DiskPressure = true }) }},
	}
	for _, s := range steps {
		h.advance(s.at)
		s.op()
	}
	h.advance(40 * time.Minute)
	a.Stop()

	var got strings.Builder
	for _, c := range h.take() {
		fmt.Fprintf(&got, "%v %s %s", c.at, c.verb, c.res)
		if c.err != nil {
			fmt.Fprintf(&got, " (%v)", c.err)
		}
		got.WriteByte('\n')
	}
	golden := "testdata/heartbeat-timeline.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the node's requests and their times differ from %s (go test -run TestHeartbeatTimeline -update ./agent rewrites it; compare with git diff):\n%s", golden, got.String())
	}
}

// TestStatusLoopSleepsBetweenReports: in lease mode with nothing changing, the status loop wakes for
// its reports (and the watch of its own patches), not at every 10 s tick.
func TestStatusLoopSleepsBetweenReports(t *testing.T) {
	h := newHarness(t)
	h.agent("fakelet-00000", 0).Start(h.ctx)
	h.advance(time.Minute)
	h.take()
	runs := h.sched.Runs()
	h.advance(21 * time.Minute)
	var renewals, patches int
	for _, c := range h.take() {
		switch {
		case c.verb == "update" && c.res == "leases":
			renewals++
		case c.verb == "patch" && c.res == "nodes/status":
			patches++
		}
	}
	// Each renewal is a run of the lease loop; each report a wake and a tick, and the tick after it
	// that finds the patched Node unchanged.
	if got, most := int(h.sched.Runs()-runs), renewals+3*patches; got > most || patches != 4 {
		t.Errorf("%d task runs for %d renewals and %d reports in 20 minutes, want at most %d", got, renewals, patches, most)
	}
}
