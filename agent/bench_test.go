package agent

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/scheduler"
)

// The benchmarks measure what an agent itself spends per heartbeat, against stub clients that answer
// at once without encoding: the cost of the apiserver round trip is make bench's business.

type stubLeases struct {
	coordinationv1client.LeaseInterface
}

func (stubLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return l, nil
}

type stubCoordination struct {
	coordinationv1client.CoordinationV1Interface
}

func (stubCoordination) Leases(string) coordinationv1client.LeaseInterface { return stubLeases{} }

type stubNodes struct {
	corev1client.NodeInterface
	node *corev1.Node
}

func (s stubNodes) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.Node, error) {
	return s.node, nil
}

type stubCore struct {
	corev1client.CoreV1Interface
	node *corev1.Node
}

func (s stubCore) Nodes() corev1client.NodeInterface { return stubNodes{node: s.node} }

func benchAgent(b *testing.B) (*Agent, *run) {
	b.Helper()
	fc := testingclock.NewFakeClock(t0)
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "bench", Images: MaxImages})
	if err != nil {
		b.Fatal(err)
	}
	cfg := &Config{Template: tmpl, Heartbeat: kubeletHeartbeat(b), Footprint: FootprintHeartbeat, Scheduler: scheduler.New(fc)}
	a := New(cfg, Clients{}, "fakelet-00042", 42, "zone-1")
	now := metav1.NewTime(t0)
	node := tmpl.initialNode(a, now, a.health.conditions(nil, now))
	node.UID, node.ResourceVersion = "uid", "1"
	a.api = Clients{Core: stubCore{node: node}, Coordination: stubCoordination{}}
	a.remember(node)
	return a, newRun(a, context.Background())
}

// BenchmarkLeaseRenewal is one steady-state renewal: copy the last lease, renew it, PUT it.
func BenchmarkLeaseRenewal(b *testing.B) {
	_, r := benchAgent(b)
	holder := "fakelet-00042"
	r.lease.latest = &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: holder, Namespace: LeaseNamespace, ResourceVersion: "7", UID: "lease-uid",
			CreationTimestamp: metav1.NewTime(t0),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: holder, UID: "uid"}},
			// What the server returns with every Lease, and the lease controller sends back.
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "coordination.k8s.io/v1", Time: &metav1.Time{Time: t0}, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"uid\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`)}}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
	b.ReportAllocs()
	for b.Loop() {
		r.lease.sync()
	}
}

// BenchmarkStatusSyncUnchanged is the status loop's common tick: recompute, compare, send nothing.
func BenchmarkStatusSyncUnchanged(b *testing.B) {
	_, r := benchAgent(b)
	r.status.registered = true
	r.status.lastReport = t0
	b.ReportAllocs()
	for b.Loop() {
		r.status.update()
	}
}

// BenchmarkStatusChangeDetection is the status tick when the Node or the health is new since the last
// tick: recompute the status and compare it with the server's.
func BenchmarkStatusChangeDetection(b *testing.B) {
	_, r := benchAgent(b)
	r.status.registered = true
	r.status.lastReport = t0
	b.ReportAllocs()
	for b.Loop() {
		r.status.unchanged.node = nil
		r.status.update()
	}
}

// BenchmarkStatusPatchTwoWay is a status patch by PatchNodeStatus: the two-way strategic merge patch
// of a 50-image Node, what any change but heartbeat times costs.
func BenchmarkStatusPatchTwoWay(b *testing.B) {
	a, r := benchAgent(b)
	original := a.serverNode()
	node, _ := r.status.updated(original, a.health, metav1.NewTime(t0.Add(5*time.Minute)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.status.c.patchNodeStatus(heartbeatClient, original, node, original.UID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatusPatch is the periodic status report: the heartbeat-only patch, written directly.
func BenchmarkStatusPatch(b *testing.B) {
	_, r := benchAgent(b)
	r.status.registered = true
	b.ReportAllocs()
	for b.Loop() {
		r.status.lastReport = time.Time{}
		r.status.update()
	}
}

// BenchmarkNewAgent is the memory an idle agent holds.
func BenchmarkNewAgent(b *testing.B) {
	a, _ := benchAgent(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = New(a.cfg, a.api, "fakelet-00042", 42, "zone-1")
	}
}

// BenchmarkSteadyHeartbeat runs 100 registered lease-mode agents against the stub clients on the fake
// clock, a minute of heartbeats per iteration, and reports the scheduler's task runs (each a wakeup of
// a worker) and the CPU per lease renewal.
func BenchmarkSteadyHeartbeat(b *testing.B) {
	fc := testingclock.NewFakeClock(t0)
	sched, ctx := runScheduler(b, fc)
	const agents = 100
	var renewals renewalCount
	for range agents {
		a, r := benchAgent(b)
		a.cfg.Recorder = &renewals
		startSteady(a, r, sched, ctx, t0)
	}
	at := time.Minute
	sched.Advance(fc, t0.Add(at))
	runs, renewed := sched.Runs(), renewals.Load()
	b.ResetTimer()
	for range b.N {
		at += time.Minute
		sched.Advance(fc, t0.Add(at))
	}
	b.StopTimer()
	n := float64(renewals.Load() - renewed)
	b.ReportMetric(float64(sched.Runs()-runs)/n, "runs/renewal")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/renewal")
}

// BenchmarkPacedHeartbeat is BenchmarkSteadyHeartbeat on the real clock, its periods shortened a
// hundredfold (a renewal and a status tick every 100 ms, a report every 3 s) so that the scheduler
// and its workers wake from idle as a fleet's do: the process's CPU per renewal counts the wakeups'
// cost, which the fake clock does not. Run it with -cpu 1 and -benchtime 1x (one 3 s window).
func BenchmarkPacedHeartbeat(b *testing.B) {
	sched, ctx := runScheduler(b, clock.RealClock{})
	const agents = 20 // 200 renewals a second, as 2000 nodes send
	var renewals renewalCount
	for range agents {
		a, r := benchAgent(b)
		a.cfg.Heartbeat.RenewInterval = 100 * time.Millisecond
		a.cfg.Heartbeat.StatusUpdateFrequency = 100 * time.Millisecond
		a.cfg.Heartbeat.StatusReportFrequency = 3 * time.Second
		a.cfg.Recorder = &renewals
		startSteady(a, r, sched, ctx, time.Now())
	}
	time.Sleep(time.Second) // the agents' first ticks, all at once, are not the steady state
	b.ResetTimer()
	runs, renewed, cpu0 := sched.Runs(), renewals.Load(), cpuTime()
	for range b.N {
		time.Sleep(3 * time.Second)
	}
	n := float64(renewals.Load() - renewed)
	b.ReportMetric(float64(sched.Runs()-runs)/n, "runs/renewal")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/n, "cpu-µs/renewal")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// renewalCount is a Recorder that counts lease renewals.
type renewalCount struct{ atomic.Int64 }

func (*renewalCount) Request(Request)              {}
func (*renewalCount) Heartbeat(string, error)      {}
func (c *renewalCount) LeaseRenewed(time.Duration) { c.Add(1) }

// startSteady puts a registered agent holding its Lease on sched, as a fleet's is once it has
// started: its status reported at now, its lease loop renewing.
func startSteady(a *Agent, r *run, sched *scheduler.Scheduler, ctx context.Context, now time.Time) {
	a.cfg.Scheduler = sched
	r.ctx = ctx
	r.status.registered, r.status.lastReport = true, now
	holder := a.name
	r.lease.latest = &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: holder, Namespace: LeaseNamespace, ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: holder, UID: "uid"}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	r.lease.active = true
	a.run = r
	sched.After(0, &r.status)
	sched.After(0, &r.lease)
}

// runScheduler runs a scheduler on c until the benchmark ends.
func runScheduler(b *testing.B, c clock.Clock) (*scheduler.Scheduler, context.Context) {
	sched := scheduler.New(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sched.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	return sched, ctx
}
