package scenario

import (
	"errors"
	"io"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/headtail"
	"fakelet.dev/fakelet/internal/scheduler"
	"fakelet.dev/fakelet/profiles"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// faultsProfile applies every agent op in its faults phase and undoes it in its recovery phase.
const faultsProfile = `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: faults}
spec:
  nodes: 8
  groups:
    stopped: {indexes: "0"}
    cut: {indexes: "1"}
    sick: {indexes: "2"}
    full: {indexes: "3"}
    revoked: {indexes: "4"}
    slow: {indexes: "5"}
    legacy: {indexes: "6"}
  phases:
  - name: steady
    duration: 10s
  - name: faults
    duration: 60s
    actions:
    - {group: stopped, do: stop}
    - {group: cut, do: partition}
    - {group: sick, do: notReady, reason: RuntimeDown, message: containerd is down}
    - {group: full, do: condition, type: DiskPressure, status: "True"}
    - {group: revoked, do: denyAuth}
    - {group: slow, do: latency, delay: 2s}
    - {group: legacy, do: mode, mode: status}
  - name: recovery
    duration: 60s
    actions:
    - {group: stopped, do: start}
    - {group: cut, do: heal}
    - {group: sick, do: ready}
    - {group: full, do: condition, type: DiskPressure, status: "False"}
    - {group: revoked, do: restoreAuth}
    - {group: slow, do: latency, delay: 0s}
    - {group: legacy, do: mode, mode: lease}
`

func TestEachOpReachesItsAgent(t *testing.T) {
	h := newHarness(t, faultsProfile)
	start := h.waitForPhases()
	faults, recovery := start.Add(10*time.Second), start.Add(70*time.Second)
	agents := h.fleet.Agents()
	before := make([]agent.Stats, len(agents))
	for i, a := range agents {
		before[i] = a.Stats()
	}

	h.advanceTo(start, 10*time.Second)
	rec := h.runner.Record()
	if len(rec.Applied) != 7 {
		t.Fatalf("%d ops applied at the start of faults, want 7: %+v", len(rec.Applied), rec.Applied)
	}
	for _, a := range rec.Applied {
		if !a.At.Equal(faults) || a.Err != "" || a.Phase != 1 {
			t.Errorf("applied %+v, want at %v in phase 1 without error", a, faults)
		}
	}
	if agents[0].Running() {
		t.Error("stop: node 0 still runs")
	}
	if m := agents[6].Mode(); m != heartbeat.ModeStatus {
		t.Errorf("mode: node 6 heartbeats in mode %s, want status", m)
	}
	// Node 5's requests now wait 2 s: its next renewal, due 10.0-10.4 s after its last one, comes
	// 12.0-12.4 s after it.
	last5 := agents[5].Stats().LastLeaseRenewal
	h.advanceTo(last5, 11500*time.Millisecond)
	if got := agents[5].Stats().LastLeaseRenewal; !got.Equal(last5) {
		t.Errorf("latency: node 5 renewed %v after its previous renewal, want no sooner than 12 s", got.Sub(last5))
	}
	h.advanceTo(last5, 12500*time.Millisecond)
	if got := agents[5].Stats().LastLeaseRenewal; got.Equal(last5) {
		t.Error("latency: node 5 did not renew within 12.5 s")
	}

	h.advanceTo(start, 65*time.Second)
	sick := condition(h.node("fakelet-00002"), corev1.NodeReady)
	if sick.Status != corev1.ConditionFalse || sick.Reason != "RuntimeDown" || sick.Message != "containerd is down" {
		t.Errorf("notReady: node 2 Ready condition %+v, want False RuntimeDown", sick)
	}
	if c := condition(h.node("fakelet-00003"), corev1.NodeDiskPressure); c.Status != corev1.ConditionTrue {
		t.Errorf("condition: node 3 DiskPressure %s, want True", c.Status)
	}
	for _, i := range []int{0, 1, 4} {
		if got := agents[i].Stats().LastLeaseRenewal; got.After(faults) {
			t.Errorf("node %d renewed its lease at +%v during its fault", i, got.Sub(start))
		}
	}
	if got := agents[7].Stats().LastLeaseRenewal; got.Before(faults.Add(40 * time.Second)) {
		t.Errorf("untouched node 7 last renewed at +%v", got.Sub(start))
	}
	for _, i := range []int{1, 4} {
		if errs := agents[i].Stats().RequestErrors - before[i].RequestErrors; errs == 0 {
			t.Errorf("node %d (partition or denyAuth) had no failed requests", i)
		}
	}
	if st := agents[0].Stats(); st.RequestErrors != before[0].RequestErrors {
		t.Errorf("stopped node 0 failed %d requests: a dead kubelet sends nothing", st.RequestErrors-before[0].RequestErrors)
	}
	if patches := agents[6].Stats().StatusPatches - before[6].StatusPatches; patches < 5 {
		t.Errorf("status mode: node 6 patched its status %d times in 55 s, want one every 10 s", patches)
	}

	h.advanceTo(start, 100*time.Second)
	if !agents[0].Running() {
		t.Error("start: node 0 does not run")
	}
	for i := range 7 {
		if got := agents[i].Stats().LastLeaseRenewal; !got.After(recovery) {
			t.Errorf("node %d has not renewed its lease since recovery began", i)
		}
	}
	if m := agents[6].Mode(); m != heartbeat.ModeLease {
		t.Errorf("mode: node 6 in mode %s after recovery, want lease", m)
	}
	n2 := h.node("fakelet-00002")
	if c := condition(n2, corev1.NodeReady); c.Status != corev1.ConditionTrue || c.Reason != "KubeletReady" {
		t.Errorf("ready: node 2 Ready %+v", c)
	}
	if c := condition(h.node("fakelet-00003"), corev1.NodeDiskPressure); c.Status != corev1.ConditionFalse {
		t.Errorf("condition: node 3 DiskPressure %s, want False", c.Status)
	}
	h.advanceTo(start, 130*time.Second)
	h.finished()
	rec = h.runner.Record()
	if len(rec.Applied) != 14 {
		t.Errorf("%d ops applied, want 14", len(rec.Applied))
	}
	for _, a := range applied(rec, profiles.OpStart) {
		if !a.At.Equal(recovery) || a.Phase != 2 || a.Group != "stopped" {
			t.Errorf("start recorded as %+v", a)
		}
	}
}

func TestDeleteLeaseOnlyWhenOurNodeOwnsIt(t *testing.T) {
	h := newHarness(t, `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: lease-loss}
spec:
  nodes: 3
  groups:
    victims: {indexes: "0-1"}
  phases:
  - name: steady
    duration: 30s
  - name: loss
    duration: 30s
    actions:
    - {group: victims, do: deleteLease}
`)
	start := h.waitForPhases()
	h.advanceTo(start, 25*time.Second)
	old, err := h.lease("fakelet-00000")
	if err != nil {
		t.Fatal(err)
	}
	// Node 1's kubelet dies and someone else's Lease takes its name, owned by another Node uid.
	h.fleet.Agent(1).Stop()
	foreign, err := h.lease("fakelet-00001")
	if err != nil {
		t.Fatal(err)
	}
	foreign.OwnerReferences[0].UID = "someone-else"
	if _, err := h.client.CoordinationV1().Leases(agent.LeaseNamespace).Update(t.Context(), foreign, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	h.advanceTo(start, 30*time.Second)
	rec := h.runner.Record()
	got := applied(rec, profiles.OpDeleteLease)
	if a := got[0]; a.Err != "" || !a.At.Equal(start.Add(30*time.Second)) {
		t.Errorf("deleteLease of node 0 recorded as %+v", a)
	}
	if a, ok := got[1]; !ok || a.Err == "" {
		t.Errorf("deleteLease of a lease node 1 does not own recorded as %+v, want an error", a)
	}
	if _, err := h.lease("fakelet-00000"); !apierrors.IsNotFound(err) {
		t.Errorf("node 0's lease after deleteLease: %v", err)
	}
	if l, err := h.lease("fakelet-00001"); err != nil || l.OwnerReferences[0].UID != "someone-else" {
		t.Errorf("the lease node 1 does not own was touched: %v %v", l, err)
	}
	// Node 0's agent recreates its lease at its next sync: a new object, owned by the same Node.
	h.advanceTo(start, 45*time.Second)
	fresh, err := h.lease("fakelet-00000")
	if err != nil {
		t.Fatalf("node 0's lease was not recreated: %v", err)
	}
	if fresh.UID == old.UID || fresh.OwnerReferences[0].UID != old.OwnerReferences[0].UID {
		t.Errorf("recreated lease uid %s owner %s; before uid %s owner %s", fresh.UID, fresh.OwnerReferences[0].UID, old.UID, old.OwnerReferences[0].UID)
	}
	h.advanceTo(start, 60*time.Second)
	h.finished()
}

func TestFlapStopsAndStartsInTurn(t *testing.T) {
	h := newHarness(t, `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: flapping}
spec:
  nodes: 2
  groups:
    flappers: {indexes: "0"}
  phases:
  - name: flapping
    duration: 60s
    actions:
    - {group: flappers, do: flap, period: 20s, duty: 0.25}
`)
	start := h.waitForPhases()
	a := h.fleet.Agent(0)
	// Each 20 s cycle: stopped for 5 s, then running for 15 s; three cycles fit in the phase.
	for _, step := range []struct {
		at      time.Duration
		running bool
	}{{1 * time.Second, false}, {6 * time.Second, true}, {21 * time.Second, false}, {26 * time.Second, true}, {41 * time.Second, false}, {46 * time.Second, true}} {
		h.advanceTo(start, step.at)
		if a.Running() != step.running {
			t.Errorf("+%v: node 0 running %v, want %v", step.at, a.Running(), step.running)
		}
	}
	h.advanceTo(start, 60*time.Second)
	h.finished()
	if got, want := h.applied(start), "stop@0s start@5s stop@20s start@25s stop@40s start@45s"; got != want {
		t.Errorf("applied %s, want %s", got, want)
	}
	if !h.fleet.Agent(1).Running() {
		t.Error("node 1, not in the group, was stopped")
	}
}

// TestALongFlapKeepsABoundedRecord: a flap that applies more ops than the record lists keeps the
// first and the last AppliedKept of them, in order, and counts them all. (Driven through record, the
// runner's one way into the record: a harness at a second per flap would take minutes.)
func TestALongFlapKeepsABoundedRecord(t *testing.T) {
	plan := resolvePlan(t, `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: long-flap}
spec:
  nodes: 30
  groups:
    flappers: {indexes: "0-29"}
  phases:
  - name: flapping
    duration: 1h
    actions:
    - {group: flappers, do: flap, period: 1s, duty: 0.5}
`)
	clk := testingclock.NewFakeClock(t0)
	r := &Runner{plan: plan, counts: make([]phaseCounts, 1), log: io.Discard, applied: headtail.Sample[Applied]{Keep: AppliedKept},
		sched: scheduler.New(clk)}
	total := 0
	var all []profiles.Event
	for ev := range plan.Schedule().All() {
		all = append(all, ev)
		var err error
		if total%100 == 0 {
			err = errors.New("refused")
		}
		clk.SetTime(t0.Add(ev.At))
		r.record(ev, err)
		if total++; total == 5*AppliedKept {
			break
		}
	}
	rec := r.Record()
	if rec.AppliedOK+rec.AppliedFailed != total || rec.AppliedFailed != total/100 {
		t.Fatalf("%d ops applied, %d failed: want %d and %d", rec.AppliedOK, rec.AppliedFailed, total-total/100, total/100)
	}
	if len(rec.Applied) != 2*AppliedKept {
		t.Fatalf("the record lists %d of %d ops, want the first and last %d", len(rec.Applied), total, AppliedKept)
	}
	for i := 1; i < len(rec.Applied); i++ {
		if rec.Applied[i].At.Before(rec.Applied[i-1].At) {
			t.Fatalf("op %d at %v before op %d at %v: not in order", i, rec.Applied[i].At, i-1, rec.Applied[i-1].At)
		}
	}
	for i, want := range map[int]profiles.Event{0: all[0], AppliedKept - 1: all[AppliedKept-1], AppliedKept: all[total-AppliedKept], 2*AppliedKept - 1: all[total-1]} {
		if got := rec.Applied[i]; got.Node != want.Node || !got.At.Equal(t0.Add(want.At)) || got.Op != want.Op {
			t.Errorf("listed op %d: node %d %s at %v, want node %d %s at %v", i, got.Node, got.Op, got.At, want.Node, want.Op, t0.Add(want.At))
		}
	}
}

// A restart stops the kubelet and starts a new one after its downtime, on the fleet's clock.
func TestRestartStartsAgainAfterItsDowntime(t *testing.T) {
	h := newHarness(t, `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: restarting}
spec:
  nodes: 2
  groups:
    slow: {indexes: "0"}
    quick: {indexes: "1"}
  phases:
  - name: restart
    duration: 60s
    actions:
    - {group: slow, do: restart, downtime: 10s}
    - {group: quick, do: restart, at: 5s}
`)
	start := h.waitForPhases()
	slow, quick := h.fleet.Agent(0), h.fleet.Agent(1)
	quickBefore := quick.Stats().StatusPatches
	for _, step := range []struct {
		at      time.Duration
		running bool
	}{{1 * time.Second, false}, {9 * time.Second, false}, {10 * time.Second, true}} {
		h.advanceTo(start, step.at)
		if slow.Running() != step.running {
			t.Errorf("+%v: node 0 running %v, want %v", step.at, slow.Running(), step.running)
		}
	}
	// The quick one restarted with no downtime: it runs, and its new process reported its status.
	if !quick.Running() || quick.Stats().StatusPatches <= quickBefore {
		t.Errorf("node 1 after its restart: running %v, status patches %d (%d before)", quick.Running(), quick.Stats().StatusPatches, quickBefore)
	}
	h.advanceTo(start, 60*time.Second)
	h.finished()
	if got, want := h.applied(start), "restart@0s restart@5s"; got != want {
		t.Errorf("applied %s, want %s", got, want)
	}
}

// An op's time is when it took effect: of ops due at one moment, each is timed after those before it
// and their hooks, so a renewal an agent sent before its own stop counts as before it.
func TestAnOpIsTimedWhenItTookEffect(t *testing.T) {
	var h *harness
	slowHook := func(_ *fleet.Config, rc *Config, _ *fake.Clientset) {
		rc.OnApplied = func(a Applied) {
			if a.Op == profiles.OpStop {
				h.clock.Step(5 * time.Millisecond) // what the hooks of one stop take
			}
		}
	}
	h = newHarness(t, `
apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: one-moment}
spec:
  nodes: 3
  groups:
    victims: {indexes: "0-2"}
  phases:
  - name: outage
    duration: 10s
    actions:
    - {group: victims, do: stop}
`, slowHook)
	start := h.waitForPhases()
	h.advanceTo(start, 10*time.Second)
	h.finished()
	if got, want := h.applied(start), "stop@0s stop@5ms stop@10ms"; got != want {
		t.Errorf("applied %s, want %s", got, want)
	}
}
