package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/fleettest"
)

// leftFleet is n Nodes of fleet blue with their Leases, renewed at renewed, and a pod on each: what
// a --keep run left.
func leftFleet(n int, renewed time.Time) *fake.Clientset {
	var objs []runtime.Object
	for i := range n {
		name := fleetname.NodeName(fleetname.DefaultNamePrefix, i)
		uid := types.UID("node-" + name)
		objs = append(objs,
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, Labels: map[string]string{fleetname.Label: "blue"},
				Annotations: map[string]string{fleetname.RunAnnotation: "run-a"}}},
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agent.LeaseNamespace, UID: types.UID("lease-" + name),
				Annotations:     map[string]string{fleetname.RunAnnotation: "run-a"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
					RenewTime: &metav1.MicroTime{Time: renewed}}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: PodName(name, 0), Namespace: fleetname.PodNamespace, UID: types.UID("pod-" + name),
				Labels: map[string]string{fleetname.Label: "blue"}}, Spec: corev1.PodSpec{NodeName: name}},
		)
	}
	return fake.NewClientset(objs...)
}

func count(t *testing.T, c *fake.Clientset) (nodes, leases, pods int) {
	t.Helper()
	n, err1 := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	l, err2 := c.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	p, err3 := c.CoreV1().Pods(fleetname.PodNamespace).List(context.Background(), metav1.ListOptions{})
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	return len(n.Items), len(l.Items), len(p.Items)
}

// stepping runs fn while it steps clk 10 s whenever something waits on it: DeleteFleet and Preflight
// watch heartbeats for a lease duration on their clock.
func stepping[T any](clk *testingclock.FakeClock, fn func() T) T {
	done := make(chan T, 1)
	go func() { done <- fn() }()
	for {
		select {
		case v := <-done:
			return v
		case <-time.After(time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(10 * time.Second)
			}
		}
	}
}

// renewing makes a live run of c's fleet renew every Lease named in names by 10 s at each list of
// Leases after the first, as its renewals would show to one that watches them.
func renewing(t *testing.T, c *fake.Clientset) {
	lists := 0
	c.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists++; lists == 1 {
			return false, nil, nil
		}
		gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
		objs, err := c.Tracker().List(gvr, coordinationv1.SchemeGroupVersion.WithKind("Lease"), agent.LeaseNamespace)
		if err != nil {
			t.Error(err)
			return false, nil, nil
		}
		for _, o := range objs.(*coordinationv1.LeaseList).Items {
			if o.Spec.RenewTime != nil {
				o.Spec.RenewTime = &metav1.MicroTime{Time: o.Spec.RenewTime.Add(10 * time.Second)}
				if err := c.Tracker().Update(gvr, &o, o.Namespace); err != nil {
					t.Error(err)
				}
			}
		}
		return false, nil, nil
	})
}

type deleted struct {
	d   Deleted
	err error
}

// TestCleanupRefusesALiveFleetUnlessForced: Leases their run renews while fakelet cleanup watches
// them for a lease duration belong to a live run: it deletes nothing and names the run, whatever
// their renew times say on its own clock: renewed 10 s ago, or 2 minutes ago (a run whose clock is
// behind). --dry-run lists what it would delete and deletes nothing; --force deletes. Leases that
// stay unchanged are a stopped run's, even renewed "2 minutes from now" (its clock was ahead). Before,
// cleanup compared the renew time with its own clock: it deleted the live fleet whose clock is 2
// minutes behind (a cleanup of 3 nodes: "deleted 3 nodes", no LiveRunError), and refused the stopped
// one whose clock was ahead.
func TestCleanupRefusesALiveFleetUnlessForced(t *testing.T) {
	ctx := context.Background()
	for _, renewed := range []time.Duration{-10 * time.Second, -2 * time.Minute} {
		clk := testingclock.NewFakeClock(t0)
		c := leftFleet(3, t0.Add(renewed))
		renewing(t, c)
		r := stepping(clk, func() deleted {
			d, err := DeleteFleet(ctx, c, CleanupOptions{Fleet: "blue", Clock: clk})
			return deleted{d, err}
		})
		var live *LiveRunError
		if !errors.As(r.err, &live) || !strings.Contains(r.err.Error(), "run run-a holds fakelet-00000, fakelet-00001, fakelet-00002") {
			t.Fatalf("renewed %v by its clock: cleanup of a live fleet: %v (deleted %d nodes), want a refusal naming run-a", renewed, r.err, len(r.d.Nodes))
		}
		if n, l, p := count(t, c); n != 3 || l != 3 || p != 3 {
			t.Fatalf("the refused cleanup left %d nodes, %d leases, %d pods, want 3 of each", n, l, p)
		}
		dry, err := DeleteFleet(ctx, c, CleanupOptions{Fleet: "blue", Clock: clk, Force: true, DryRun: true})
		if err != nil || len(dry.Nodes) != 3 || len(dry.Leases) != 3 || len(dry.Pods) != 3 {
			t.Fatalf("dry run: %+v, %v; want 3 of each listed", dry, err)
		}
		if n, l, p := count(t, c); n != 3 || l != 3 || p != 3 {
			t.Fatalf("the dry run deleted: %d nodes, %d leases, %d pods left", n, l, p)
		}
		if _, err := DeleteFleet(ctx, c, CleanupOptions{Fleet: "blue", Clock: clk, Force: true}); err != nil {
			t.Fatal(err)
		}
		if n, l, p := count(t, c); n+l+p != 0 {
			t.Errorf("--force left %d nodes, %d leases, %d pods", n, l, p)
		}
	}

	// Leases that stay unchanged are a stopped run's: no --force needed.
	for _, renewed := range []time.Duration{-40 * time.Second, 2 * time.Minute} {
		clk := testingclock.NewFakeClock(t0)
		c := leftFleet(2, t0.Add(renewed))
		r := stepping(clk, func() deleted {
			d, err := DeleteFleet(ctx, c, CleanupOptions{Fleet: "blue", Clock: clk})
			return deleted{d, err}
		})
		if r.err != nil || len(r.d.Nodes) != 2 {
			t.Errorf("renewed %v by its clock: cleanup of a stopped run's fleet: %+v, %v", renewed, r.d, r.err)
		}
	}
}

// TestCleanupLeavesWhatARunAdoptsMeanwhile: fakelet cleanup has watched a stopped run's fleet and
// deletes it; as it deletes the first Node, another run adopts fakelet-00002 (renews its Lease and
// annotates it and its Node with its run). The cleanup reads each object again before its delete and
// deletes at that version: that Node and Lease stay. Before, the cleanup checked once and then
// deleted every object it had listed.
func TestCleanupLeavesWhatARunAdoptsMeanwhile(t *testing.T) {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(t0)
	c := leftFleet(3, t0.Add(-time.Hour))
	fleettest.ResourceVersions(c)
	var once sync.Once
	c.PrependReactor("delete", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() {
			// The tracker, not the clientset, which answers one request at a time.
			leaseGVR, nodeGVR := coordinationv1.SchemeGroupVersion.WithResource("leases"), corev1.SchemeGroupVersion.WithResource("nodes")
			o, err := c.Tracker().Get(leaseGVR, agent.LeaseNamespace, "fakelet-00002")
			if err != nil {
				t.Error(err)
				return
			}
			l := o.(*coordinationv1.Lease)
			l.Annotations[fleetname.RunAnnotation] = "run-b"
			l.Spec.RenewTime = &metav1.MicroTime{Time: t0}
			l.ResourceVersion = "adopted-lease"
			if o, err = c.Tracker().Get(nodeGVR, "", "fakelet-00002"); err != nil {
				t.Error(err)
				return
			}
			n := o.(*corev1.Node)
			n.Annotations[fleetname.RunAnnotation] = "run-b"
			n.ResourceVersion = "adopted-node"
			if err := errors.Join(c.Tracker().Update(leaseGVR, l, l.Namespace), c.Tracker().Update(nodeGVR, n, "")); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil
	})
	r := stepping(clk, func() deleted {
		d, err := DeleteFleet(ctx, c, CleanupOptions{Fleet: "blue", Clock: clk, QPS: 3})
		return deleted{d, err}
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if _, err := c.CoreV1().Nodes().Get(ctx, "fakelet-00002", metav1.GetOptions{}); err != nil {
		t.Errorf("the Node run B adopted during the cleanup: %v, want it kept (deleted %v)", err, r.d.Nodes)
	}
	if _, err := c.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, "fakelet-00002", metav1.GetOptions{}); err != nil {
		t.Errorf("the Lease run B adopted during the cleanup: %v, want it kept (deleted %v)", err, r.d.Leases)
	}
	if n, l, _ := count(t, c); n != 1 || l != 1 {
		t.Errorf("%d nodes and %d leases left, want run B's one of each", n, l)
	}
}

// TestCleanupDeletesNodesAndLeasesWhenPodsFail: every pod delete fails. The Nodes and Leases are
// deleted all the same, and the error says how many pods are left, names a few and gives the first
// failure once. Before, pods went first and one at a time, and their failures came one line each.
func TestCleanupDeletesNodesAndLeasesWhenPodsFail(t *testing.T) {
	c := leftFleet(10, t0.Add(-time.Hour))
	c.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd is sad"))
	})
	clk := testingclock.NewFakeClock(t0)
	r := stepping(clk, func() deleted {
		d, err := DeleteFleet(context.Background(), c, CleanupOptions{Fleet: "blue", Clock: clk})
		return deleted{d, err}
	})
	d, err := r.d, r.err
	var left *LeftError
	if !errors.As(err, &left) {
		t.Fatalf("error %v, want a LeftError", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "left 10 pods (fakelet-00000-0, fakelet-00001-0, fakelet-00002-0 and 7 more)") || strings.Count(msg, "etcd is sad") != 1 {
		t.Errorf("error %q, want the count of pods left, three examples and one failure", msg)
	}
	if len(d.Nodes) != 10 || len(d.Leases) != 10 {
		t.Errorf("deleted %d nodes and %d leases, want 10 and 10", len(d.Nodes), len(d.Leases))
	}
	if n, l, _ := count(t, c); n+l != 0 {
		t.Errorf("%d nodes and %d leases left", n, l)
	}
}

// TestCleanupDeletesInParallel: each node delete waits until four are in flight at once, so a cleanup
// that sends one at a time never finishes. Before, fakelet cleanup's client sent at client-go's
// default 5 a second, and the end-of-run cleanup deleted pods one by one. (The fake clientset runs its
// reactors one at a time, so the wait is in a wrapper around it.)
func TestCleanupDeletesInParallel(t *testing.T) {
	c := leftFleet(8, t0.Add(-time.Hour))
	var mu sync.Mutex
	inFlight := 0
	four := make(chan struct{})
	wait := func() error {
		mu.Lock()
		inFlight++
		if inFlight == 4 {
			close(four)
		}
		mu.Unlock()
		select {
		case <-four:
			return nil
		case <-time.After(10 * time.Second):
			return apierrors.NewTimeoutError("no other delete came", 0)
		}
	}
	client := blockingDeletes{Interface: c, core: blockingCore{CoreV1Interface: c.CoreV1(), wait: wait}}
	clk := testingclock.NewFakeClock(t0)
	if err := stepping(clk, func() error {
		_, err := DeleteFleet(context.Background(), client, CleanupOptions{Fleet: "blue", QPS: 1000, Clock: clk})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// blockingDeletes is a clientset whose node deletes call wait first.
type blockingDeletes struct {
	kubernetes.Interface
	core blockingCore
}

func (b blockingDeletes) CoreV1() corev1client.CoreV1Interface { return b.core }

type blockingCore struct {
	corev1client.CoreV1Interface
	wait func() error
}

func (b blockingCore) Nodes() corev1client.NodeInterface {
	return blockingNodes{NodeInterface: b.CoreV1Interface.Nodes(), wait: b.wait}
}

type blockingNodes struct {
	corev1client.NodeInterface
	wait func() error
}

func (b blockingNodes) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if err := b.wait(); err != nil {
		return err
	}
	return b.NodeInterface.Delete(ctx, name, opts)
}

func TestCleanupDeadlineScalesWithTheFleet(t *testing.T) {
	small, large := CleanupDeadline(10, 100), CleanupDeadline(20000, 100)
	if small < time.Minute || large < 2*200*time.Second {
		t.Errorf("deadlines %v for 10 objects and %v for 20,000 at 100/s: want at least a minute, and twice the 200 s the rate needs", small, large)
	}
}

// TestCleanupDeadlineNeverWraps: the slowest rate the flags accept, on the largest fleet with its
// pods, gives a deadline longer than the rate needs, not a negative one that ends the cleanup at once;
// a rate below CheckCleanupQPS's bound (a caller other than the flags) saturates instead of wrapping.
func TestCleanupDeadlineNeverWraps(t *testing.T) {
	objects := fleetname.MaxNodes * (2 + MaxPodsPerNode)
	for _, qps := range []float64{MinCleanupQPS, 1e-9, math.SmallestNonzeroFloat64} {
		d := CleanupDeadline(objects, qps)
		if need := float64(objects) / qps; d <= 0 || d.Seconds() < min(need, maxCleanupDeadline.Seconds()) {
			t.Errorf("CleanupDeadline(%d objects, %v/s) = %v, want at least the %v s the rate needs (at most %v)", objects, qps, d, need, maxCleanupDeadline)
		}
	}
}
