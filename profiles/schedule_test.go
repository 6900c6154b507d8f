package profiles

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/heartbeat"
)

func collect(s *Schedule, phase int) []Event {
	var evs []Event
	for ev := range s.Events(phase) {
		evs = append(evs, ev)
	}
	return evs
}

func TestPhaseWindows(t *testing.T) {
	p, err := Builtin("stop-10pct")
	if err != nil {
		t.Fatal(err)
	}
	s := mustResolve(t, p, 1000, 0).Schedule()
	want := []PhaseWindow{
		{"steady", 0, time.Minute},
		{"outage", time.Minute, 3 * time.Minute},
		{"recovery", 3 * time.Minute, 4 * time.Minute},
	}
	got := s.Phases()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Phases() = %v, want %v", got, want)
	}
	if s.Duration() != 4*time.Minute {
		t.Errorf("Duration() = %v", s.Duration())
	}
	// The outage stops every victim at its start, the recovery starts them at its start.
	for i, wantOp := range map[int]Op{1: OpStop, 2: OpStart} {
		evs := collect(s, i)
		if len(evs) != 100 {
			t.Fatalf("phase %d: %d events, want 100", i, len(evs))
		}
		for _, ev := range evs {
			if ev.At != want[i].Start || ev.Op != wantOp || ev.Phase != i || ev.Action != 0 || ev.Args != nil {
				t.Fatalf("phase %d: event %v", i, ev)
			}
		}
	}
	if evs := collect(s, 0); len(evs) != 0 {
		t.Errorf("steady has events: %v", evs)
	}
	if evs := collect(s, 3); len(evs) != 0 {
		t.Errorf("phase 3 (none) has events: %v", evs)
	}
}

// Spread staggers members evenly: the first at `at`, each next spread/n later.
func TestSpread(t *testing.T) {
	p := mustParse(t, `nodes: 10
groups: {g: {indexes: "0-3"}}
phases:
- {name: a, duration: 1m}
- name: b
  duration: 1m
  actions:
  - {group: g, do: stop, at: 10s, spread: 40s}
  - {group: g, do: deleteLease, at: 10s}`)
	var got []string
	for ev := range mustResolve(t, p, 10, 0).Schedule().Events(1) {
		got = append(got, fmt.Sprintf("%v %d %s", ev.At, ev.Node, ev.Op))
	}
	want := []string{
		"1m10s 0 stop", "1m10s 0 deleteLease", "1m10s 1 deleteLease", "1m10s 2 deleteLease", "1m10s 3 deleteLease",
		"1m20s 1 stop", "1m30s 2 stop", "1m40s 3 stop",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStagger(t *testing.T) {
	for _, tc := range []struct {
		spread time.Duration
		k, n   int
		want   time.Duration
	}{
		{time.Minute, 0, 4, 0},
		{time.Minute, 3, 4, 45 * time.Second},
		{time.Minute, 0, 1, 0},
		{0, 5, 10, 0},
		{10, 2, 3, 6}, // 10ns over 3 members: 0, 3, 6
		{168 * time.Hour, 999_999, 1_000_000, 168*time.Hour - 604800000}, // no overflow at the bounds
	} {
		if got := stagger(tc.spread, tc.k, tc.n); got != tc.want {
			t.Errorf("stagger(%v, %d, %d) = %v, want %v", tc.spread, tc.k, tc.n, got, tc.want)
		}
	}
}

// Flap: every member alternates stop and start, starting with a stop, ending running, inside the phase,
// each transition within its jitter of the nominal time.
func TestFlap(t *testing.T) {
	p := mustParse(t, `nodes: 100
groups: {g: {percent: 20}}
phases:
- {name: a, duration: 30s}
- name: flap
  duration: 5m
  actions:
  - {group: g, do: flap, at: 10s, period: 60s, duty: 0.25, jitter: 5s, spread: 20s}`)
	plan := mustResolve(t, p, 100, 3)
	s := plan.Schedule()
	evs := collect(s, 1)
	members := plan.Groups["g"]
	index := map[int]int{}
	for k, m := range members {
		index[m] = k
	}
	perNode := map[int][]Event{}
	var last time.Duration
	for _, ev := range evs {
		if ev.At < last {
			t.Fatalf("events out of order at %v", ev)
		}
		last = ev.At
		perNode[ev.Node] = append(perNode[ev.Node], ev)
	}
	if len(perNode) != len(members) {
		t.Fatalf("%d nodes flap, want %d", len(perNode), len(members))
	}
	const (
		phaseStart = 30 * time.Second
		phaseEnd   = phaseStart + 5*time.Minute
		period     = time.Minute
		down       = 15 * time.Second
		jitter     = 5 * time.Second
	)
	for node, nevs := range perNode {
		first := phaseStart + 10*time.Second + stagger(20*time.Second, index[node], len(members))
		if len(nevs)%2 != 0 {
			t.Errorf("node %d: %d events, not stop/start pairs: it would end stopped", node, len(nevs))
		}
		for i, ev := range nevs {
			cycle := time.Duration(i / 2)
			nominal, op := first+cycle*period, OpStop
			if i%2 == 1 {
				nominal, op = nominal+down, OpStart
			}
			if ev.Op != op || ev.At < nominal || ev.At >= nominal+jitter || ev.At >= phaseEnd {
				t.Errorf("node %d event %d = %v, want %s in [%v, %v) before %v", node, i, ev, op, nominal, nominal+jitter, phaseEnd)
			}
		}
		// Every cycle whose start fits in the phase happens: 4 or 5 of them here.
		if n := len(nevs) / 2; n < 4 || n > 5 {
			t.Errorf("node %d flaps %d times", node, n)
		}
	}
	again := collect(plan.Schedule(), 1)
	if fmt.Sprint(again) != fmt.Sprint(evs) {
		t.Errorf("a second computation of the schedule differs")
	}
	other := collect(mustResolve(t, p, 100, 4).Schedule(), 1)
	if fmt.Sprint(other) == fmt.Sprint(evs) {
		t.Errorf("seeds 3 and 4 give the same flaps")
	}
}

// Churn adds nodes with new indexes at its rate, removes group members, and nothing happens to a node
// after its removal.
func TestChurn(t *testing.T) {
	p := mustParse(t, `nodes: 10
groups: {g: {indexes: "0-3"}}
phases:
- name: up
  duration: 1m
  actions:
  - {do: churn, add: 3, rate: 2}
  - {group: g, do: churn, remove: 2, at: 30s}
- name: later
  duration: 1m
  actions:
  - {group: g, do: stop}
  - {do: churn, add: 1}`)
	plan := mustResolve(t, p, 10, 0)
	if plan.TotalNodes() != 14 {
		t.Errorf("TotalNodes() = %d, want 14", plan.TotalNodes())
	}
	var got []string
	for ev := range plan.Schedule().All() {
		got = append(got, fmt.Sprintf("%v %d %s", ev.At, ev.Node, ev.Op))
	}
	want := []string{
		"0s 10 add", "500ms 11 add", "1s 12 add",
		"30s 0 remove", "30s 1 remove",
		"1m0s 2 stop", "1m0s 3 stop", "1m0s 13 add",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Events carry their parameters.
func TestEventArgs(t *testing.T) {
	p := mustParse(t, `nodes: 2
groups: {g: {count: 2}}
phases:
- name: p
  duration: 1m
  actions:
  - {group: g, do: notReady, reason: RuntimeDown, message: containerd is gone}
  - {group: g, do: condition, type: PIDPressure, status: "False", at: 1s}
  - {group: g, do: latency, delay: 250ms, at: 2s}
  - {group: g, do: mode, mode: status, at: 3s}
  - {group: g, do: restart, at: 4s}
  - {group: g, do: restart, downtime: 10s, at: 5s}`)
	evs := collect(mustResolve(t, p, 2, 0).Schedule(), 0)
	want := []Args{
		{Reason: "RuntimeDown", Message: "containerd is gone"},
		{Condition: PIDPressure, Status: ConditionFalse},
		{Delay: 250 * time.Millisecond},
		{Mode: heartbeat.ModeStatus},
		{restart: true},
		{Downtime: 10 * time.Second, restart: true},
	}
	if len(evs) != 12 {
		t.Fatalf("%d events, want 12", len(evs))
	}
	if got := evs[10].String(); got != "5s node 0 restart downtime=10s (phases[0].actions[5])" {
		t.Errorf("restart event: %s", got)
	}
	for i, ev := range evs {
		if ev.Args == nil || *ev.Args != want[i/2] {
			t.Errorf("event %v: args %+v, want %+v", ev, ev.Args, want[i/2])
		}
	}
	if evs[0].Args != evs[1].Args {
		t.Errorf("events of one action do not share their args")
	}
}

// The schedule of every built-in profile is sorted and inside its phases.
func TestBuiltinSchedules(t *testing.T) {
	for _, name := range BuiltinNames() {
		p, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		plan := mustResolve(t, p, p.Spec.Nodes, p.Spec.Seed)
		s := plan.Schedule()
		windows := s.Phases()
		var prev Event
		n := 0
		for ev := range s.All() {
			w := windows[ev.Phase]
			if ev.At < w.Start || ev.At >= w.End {
				t.Errorf("%s: event %v outside phase %s [%v, %v)", name, ev, w.Name, w.Start, w.End)
			}
			if n > 0 && (ev.At < prev.At || ev.At == prev.At && ev.Phase == prev.Phase && ev.Action < prev.Action) {
				t.Errorf("%s: %v comes after %v", name, ev, prev)
			}
			if ev.Node < 0 || ev.Node >= plan.TotalNodes() {
				t.Errorf("%s: event %v names a node outside the fleet", name, ev)
			}
			prev = ev
			n++
		}
	}
}

// One small profile with every verb, rendered: the golden file shows what the runner is given.
func TestScheduleGolden(t *testing.T) {
	p := mustParse(t, `nodes: 6
zones: 2
groups:
  a: {indexes: "0-2"}
  z: {zone: zone-2}
phases:
- name: first
  duration: 1m
  actions:
  - {group: a, do: stop, spread: 30s}
  - {group: z, do: partition, at: 5s}
  - {group: z, do: notReady, at: 10s}
  - {group: a, do: flap, at: 31s, period: 10s, duty: 0.5, jitter: 2s}
- name: second
  duration: 30s
  actions:
  - {group: a, do: start}
  - {group: z, do: heal}
  - {group: z, do: ready, at: 1s}
  - {group: a, do: condition, type: MemoryPressure, at: 2s}
  - {group: a, do: deleteLease, at: 3s}
  - {group: z, do: denyAuth, at: 4s}
  - {group: z, do: restoreAuth, at: 5s}
  - {group: a, do: latency, delay: 1s, at: 6s}
  - {group: a, do: mode, mode: status, at: 7s}
  - {group: z, do: churn, add: 2, remove: 1, at: 8s, spread: 4s}`)
	var b strings.Builder
	s := mustResolve(t, p, 6, 1).Schedule()
	for _, w := range s.Phases() {
		fmt.Fprintf(&b, "phase %s [%v, %v)\n", w.Name, w.Start, w.End)
	}
	for ev := range s.All() {
		fmt.Fprintln(&b, ev)
	}
	golden(t, "schedule.golden", b.String())
}

func TestEventsStopEarly(t *testing.T) {
	p, _ := Builtin("flap")
	s := mustResolve(t, p, 1000, 0).Schedule()
	n := 0
	for range s.All() {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("iteration went on after break: %d", n)
	}
	if evs := collect(s, -1); evs != nil {
		t.Errorf("phase -1 has events")
	}
}

// 100,000 nodes flapping for ten minutes are millions of events; computing them must cost memory in
// proportion to the nodes, not the events.
func TestScheduleMemoryAt100kNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds")
	}
	p := mustParse(t, `nodes: 100000
groups: {g: {percent: 100}}
phases:
- name: flap
  duration: 10m
  actions:
  - {group: g, do: flap, period: 1m, jitter: 5s, spread: 1m}`)
	plan := mustResolve(t, p, 100000, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	for range plan.Schedule().All() {
		n++
	}
	runtime.ReadMemStats(&after)
	if n < 1_500_000 {
		t.Errorf("%d events, want about 1.8 million", n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("computing %d events allocated %d MB", n, alloc>>20)
	}
}

func BenchmarkFlapSchedule(b *testing.B) {
	p := mustParse(b, `nodes: 10000
groups: {g: {percent: 100}}
phases:
- name: flap
  duration: 10m
  actions:
  - {group: g, do: flap, period: 1m, jitter: 5s, spread: 1m}`)
	plan := mustResolve(b, p, 10000, 0)
	b.ReportAllocs()
	for b.Loop() {
		for range plan.Schedule().All() {
		}
	}
}
