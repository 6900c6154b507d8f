package falsealarm_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/internal/scheduler"
	"fakelet.dev/fakelet/measure/falsealarm"
	"fakelet.dev/fakelet/measure/observe"
	"fakelet.dev/fakelet/measure/reaction"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const node = "fakelet-00001"

// fleet is one agent on a fake clock and client-go's fake clientset, recording into a Detector.
// With the jitter drawn at 0.5 its Node registers at 0.1 s, its Lease is created at 10.2 s (the
// first tick, at 0 s, finds no Node) and renewed every 10.2 s: 20.4 s, 30.6 s, ...
type fleet struct {
	clock  *testingclock.FakeClock
	sched  *scheduler.Scheduler
	client *fake.Clientset
	det    *falsealarm.Detector
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{clock: testingclock.NewFakeClock(t0), client: fake.NewClientset(), det: falsealarm.New(0)}
	fleettest.APIServerLike(f.client)
	f.sched = scheduler.New(f.clock)
	tmpl, err := agent.NewTemplate(agent.TemplateOptions{Fleet: "test"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &agent.Config{Template: tmpl, Heartbeat: fleettest.Resolve(t, heartbeat.Config{}), Footprint: agent.FootprintHeartbeat, Scheduler: f.sched,
		Rand: func() float64 { return 0.5 }, Recorder: f.det}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.sched.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	a := agent.New(cfg, agent.Clients{Core: f.client.CoreV1(), Coordination: f.client.CoordinationV1()}, node, 1, "")
	a.Start(ctx)
	f.advance(15 * time.Second)
	// The Lease watch may see the Lease before the Node watch delivers the Node, which it sees as
	// registered: Ready, with the admission's not-ready taint.
	f.observe(10200*time.Millisecond, observe.LeaseCreated, "", "")
	f.observe(12*time.Second, observe.Condition, "Ready", "True")
	f.observe(12*time.Second, observe.Condition, "MemoryPressure", "False")
	f.observe(12*time.Second, observe.TaintAdded, "node.kubernetes.io/not-ready", "NoSchedule")
	f.observe(13*time.Second, observe.TaintRemoved, "node.kubernetes.io/not-ready", "NoSchedule")
	return f
}

func (f *fleet) advance(d time.Duration) { f.sched.Advance(f.clock, t0.Add(d)) }

// observe passes the detector a transition of the node at t0+at.
func (f *fleet) observe(at time.Duration, kind observe.Kind, typ, status string) {
	f.det.Observe(observe.Transition{At: t0.Add(at), Node: node, Kind: kind, Type: typ, Status: status})
}

// unknown is the node lifecycle controller's reaction to a silent node at t0+at: Ready Unknown and
// the unreachable NoSchedule taint.
func (f *fleet) unknown(at time.Duration) {
	f.observe(at, observe.Condition, "Ready", "Unknown")
	f.observe(at, observe.TaintAdded, "node.kubernetes.io/unreachable", "NoSchedule")
}

// delayNextRenewal makes the fake server answer the next lease PUT d after it arrived, on the
// fleet's clock.
func (f *fleet) delayNextRenewal(d time.Duration) {
	var once sync.Once
	f.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { _ = f.sched.Sleep(context.Background(), d) })
		return false, nil, nil
	})
}

func summary(counts []falsealarm.Count) string {
	var s string
	for _, c := range counts {
		s += fmt.Sprintf("%s/%s/%s: %d (lag %d, latency %d, rejected %d, none %d) %v\n", c.Phase, c.Group, c.Event,
			c.Count, c.SendLag, c.ServerLatency, c.Rejection, c.None, c.Nodes)
	}
	return s
}

// A renewal the server holds past the grace period: the node lifecycle controller declares the node
// unknown while fakelet kept it alive. Both alarms are counted and put down to the server's latency;
// the registration's not-ready taint is not an alarm.
func TestServerLatencyFalseAlarm(t *testing.T) {
	f := newFleet(t)
	f.delayNextRenewal(60 * time.Second) // the renewal sent at 20.4 s is answered at 80.4 s
	f.advance(71 * time.Second)
	f.unknown(70400 * time.Millisecond) // 50 s after the renewal was sent
	f.advance(90 * time.Second)
	want := "/" + "/ready_unknown: 1 (lag 0, latency 1, rejected 0, none 0) [fakelet-00001]\n" +
		"//taint_unreachable_noschedule_added: 1 (lag 0, latency 1, rejected 0, none 0) [fakelet-00001]\n"
	if got := summary(f.det.Counts()); got != want {
		t.Errorf("false alarms:\n%s\nwant:\n%s", got, want)
	}
}

// The fleet's scheduler stalls (its dispatcher does not run from 15 s to 80 s, as a starved fleet's
// would): the renewal due at 20.4 s leaves at 80 s, and the alarm at 70 s is fakelet's own lag.
func TestSendLagFalseAlarm(t *testing.T) {
	f := newFleet(t)
	f.unknown(70 * time.Second)
	f.clock.SetTime(t0.Add(80 * time.Second)) // one jump: nothing ran in between
	f.sched.WaitIdle()
	f.advance(90 * time.Second)
	lease, err := f.client.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), node, metav1GetOptions)
	if err != nil || !lease.Spec.RenewTime.Time.Equal(t0.Add(80*time.Second)) {
		t.Fatalf("lease %v, %v: want it renewed at 80 s", renewTime(lease), err)
	}
	want := "//ready_unknown: 1 (lag 1, latency 0, rejected 0, none 0) [fakelet-00001]\n" +
		"//taint_unreachable_noschedule_added: 1 (lag 1, latency 0, rejected 0, none 0) [fakelet-00001]\n"
	if got := summary(f.det.Counts()); got != want {
		t.Errorf("false alarms:\n%s\nwant:\n%s", got, want)
	}
}

// What a profile asked for is no false alarm: the reactions to a stop, and those within a grace
// period of the start that ends it. Past that grace period the node is fakelet's to keep healthy
// again, and an alarm with its heartbeats on time is the controller's own (cause none), counted in
// the group of the node's latest action and the phase it came in.
func TestProfilesReactionsAreNoFalseAlarms(t *testing.T) {
	f := newFleet(t)
	f.det.PhaseBegan("steady", t0)
	f.det.Applied(reaction.Action{Phase: "outage", Group: "victims", Op: "stop", Node: node, At: t0.Add(16 * time.Second)})
	f.det.PhaseBegan("outage", t0.Add(16*time.Second))
	f.unknown(60 * time.Second)
	f.observe(300*time.Second, observe.TaintAdded, "node.kubernetes.io/unreachable", "NoExecute")
	f.det.Applied(reaction.Action{Phase: "outage", Group: "victims", Op: "start", Node: node, At: t0.Add(400 * time.Second)})
	f.observe(401*time.Second, observe.Condition, "Ready", "True")
	f.observe(402*time.Second, observe.TaintRemoved, "node.kubernetes.io/unreachable", "NoSchedule")
	f.unknown(440 * time.Second) // 40 s after the start: still the profile's
	f.det.PhaseBegan("after", t0.Add(450*time.Second))
	f.advance(500 * time.Second)
	f.unknown(500 * time.Second) // heartbeats on time since: the controller's
	want := "after/victims/ready_unknown: 1 (lag 0, latency 0, rejected 0, none 1) [fakelet-00001]\n" +
		"after/victims/taint_unreachable_noschedule_added: 1 (lag 0, latency 0, rejected 0, none 1) [fakelet-00001]\n"
	if got := summary(f.det.Counts()); got != want {
		t.Errorf("false alarms:\n%s\nwant:\n%s", got, want)
	}
}

var metav1GetOptions = metav1.GetOptions{}

func renewTime(l *coordinationv1.Lease) any {
	if l == nil || l.Spec.RenewTime == nil {
		return nil
	}
	return l.Spec.RenewTime.Time
}
