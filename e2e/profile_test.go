package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/scenario"
)

// faultsPhase is how long the faults last: the controller's grace period, plus its monitor period
// (5 s), plus room for the lease the node renewed last before the fault and for a loaded machine.
const faultsPhase = gracePeriod + 25*time.Second

// TestProfileDrivesTheRealNodeLifecycleController plays a short profile on 6 nodes against the shared
// control plane and checks the real controller's reaction to each op: a stopped kubelet and one whose
// credential is revoked go Unknown with the unreachable taint after the grace period; a NotReady one
// gets Ready=False and the not-ready taint; a deleted Lease is recreated with a new uid while its node
// stays Ready; and after start, ready and restoreAuth every node is Ready=True without those taints.
func TestProfileDrivesTheRealNodeLifecycleController(t *testing.T) {
	profile := fmt.Sprintf(`apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: e2e-faults}
spec:
  nodes: 6
  groups:
    stopped: {indexes: "0"}
    sick: {indexes: "1"}
    leaseless: {indexes: "2"}
    revoked: {indexes: "3"}
  phases:
  - name: steady
    duration: 5s
  - name: faults
    duration: %v
    actions:
    - {group: stopped, do: stop}
    - {group: sick, do: notReady}
    - {group: leaseless, do: deleteLease}
    - {group: revoked, do: denyAuth}
  - name: recovery
    duration: 1s
    actions:
    - {group: stopped, do: start}
    - {group: sick, do: ready}
    - {group: revoked, do: restoreAuth}
`, faultsPhase)
	p, err := profiles.Parse("e2e-faults.yaml", []byte(profile))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Resolve(p.Fleet())
	if err != nil {
		t.Fatal(err)
	}
	cp := controlPlane(t)
	c := admin(t, cp)
	forbidden := &forbiddenCount{}
	rf := startFleet(t, fleet.Config{
		Nodes: plan.Nodes, Fleet: "prof", NamePrefix: "prof", Zones: 1, ZoneOf: profiles.ZoneOf,
		RegisterQPS: 50, Template: agent.TemplateOptions{Images: 5}, Recorder: forbidden,
	})
	seen := watchReactions(rf.Fleet)
	leases := watchLeaseUIDs(t, c, "prof-00002")

	// The last renewal before a node's heartbeats stop is what the controller's grace period counts from.
	var mu sync.Mutex
	lastRenewal := map[int]time.Time{}
	onApplied := func(a scenario.Applied) {
		if a.Op == profiles.OpStop || a.Op == profiles.OpDenyAuth {
			mu.Lock()
			lastRenewal[a.Node] = rf.Agent(a.Node).Stats().LastLeaseRenewal
			mu.Unlock()
		}
	}
	runner, err := scenario.New(scenario.Config{Plan: plan, Fleet: rf.Fleet, Log: testLog{t}, OnApplied: onApplied})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := runner.Run(ctx); err != nil {
		t.Fatalf("profile run: %v", err)
	}
	rec := runner.Record()
	for _, a := range rec.Applied {
		if a.Err != "" {
			t.Errorf("%s on node %d failed: %s", a.Op, a.Node, a.Err)
		}
	}
	if len(rec.Applied) != 7 {
		t.Errorf("%d ops applied, want 7: %+v", len(rec.Applied), rec.Applied)
	}
	faults, recovery := rec.Phases[1].Start, rec.Phases[2].Start

	// stop and denyAuth: Unknown and unreachable:NoSchedule once the grace period has passed since the
	// node's last renewal, within a monitor period (5 s) and a little more; before recovery.
	for i, node := range map[int]string{0: "prof-00000", 3: "prof-00003"} {
		mu.Lock()
		last := lastRenewal[i]
		mu.Unlock()
		for _, ev := range []string{"Unknown", "taint " + corev1.TaintNodeUnreachable} {
			when, ok := seen.first(node, ev, faults)
			switch {
			case !ok || when.After(recovery):
				t.Errorf("%s: no %s between the fault (+%v) and recovery (+%v)", node, ev, faults.Sub(rec.Start), recovery.Sub(rec.Start))
			case last.IsZero() || when.Sub(last) < gracePeriod || when.Sub(last) > gracePeriod+10*time.Second:
				t.Errorf("%s: %s %v after its last renewal (%v), want within [%v, %v]", node, ev, when.Sub(last), last, gracePeriod, gracePeriod+10*time.Second)
			default:
				t.Logf("%s: %s %.1f s after the fault, %.1f s after its last renewal", node, ev, when.Sub(faults).Seconds(), when.Sub(last).Seconds())
			}
		}
	}
	// denyAuth: the apiserver refused the revoked node's requests, and only its.
	if n := forbidden.n.Load(); n == 0 {
		t.Error("no request was refused with 403 while node 3's credential was revoked")
	} else {
		t.Logf("%d requests refused with 403", n)
	}
	for i, a := range rf.Agents() {
		errs := a.Stats().RequestErrors
		switch i {
		case 3:
			if errs == 0 {
				t.Errorf("node 3 (denyAuth): no failed requests")
			}
		case 2:
			// After deleteLease, the kubelet's next PUT carries the old Lease's uid: 409, then it GETs
			// (404) and creates a new one. That conflict is the one failure a kubelet has too.
			if errs > 1 {
				t.Errorf("node 2 (deleteLease): %d failed requests, want at most the one conflict", errs)
			}
		default:
			if errs != 0 {
				t.Errorf("node %d: %d failed requests, want none", i, errs)
			}
		}
	}
	// notReady: Ready=False and not-ready:NoSchedule soon after (the next status sync), never Unknown.
	for _, ev := range []string{"False", "taint " + corev1.TaintNodeNotReady} {
		when, ok := seen.first("prof-00001", ev, faults)
		if !ok || when.After(recovery) || when.Sub(faults) > 20*time.Second {
			t.Errorf("prof-00001: %s at %v, want within 20 s of the notReady at %v", ev, when, faults)
		} else {
			t.Logf("prof-00001: %s %.1f s after notReady", ev, when.Sub(faults).Seconds())
		}
	}
	// deleteLease: a new Lease (a new uid) owned by the same Node, and the node never left Ready.
	uids := leases.list()
	if len(uids) < 2 {
		t.Errorf("prof-00002's lease uids over the run: %v, want the original and a recreated one", uids)
	}
	l, err := c.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), "prof-00002", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("prof-00002's lease after the run: %v", err)
	}
	n2, err := c.CoreV1().Nodes().Get(context.Background(), "prof-00002", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != n2.UID || l.UID == types.UID(uids[0]) {
		t.Errorf("prof-00002's lease after the run: uid %s owners %v; original uid %s, node uid %s", l.UID, l.OwnerReferences, uids[0], n2.UID)
	}
	for _, node := range []string{"prof-00001", "prof-00002", "prof-00004", "prof-00005"} {
		if when, ok := seen.first(node, "Unknown", rec.Start); ok {
			t.Errorf("%s went Unknown at +%v: its kubelet kept renewing", node, when.Sub(rec.Start))
		}
	}
	for _, node := range []string{"prof-00002", "prof-00004", "prof-00005"} {
		for _, ev := range []string{"False", "taint " + corev1.TaintNodeNotReady, "taint " + corev1.TaintNodeUnreachable} {
			if when, ok := seen.first(node, ev, rec.Start); ok {
				t.Errorf("%s: %s at +%v, want none", node, ev, when.Sub(rec.Start))
			}
		}
	}

	// Recovery: every node Ready=True and without the unreachable and not-ready taints. The recovery
	// phase only applies its ops: the fleet runs on after the profile, and the wait is here.
	eventually(t, 50*time.Second, "every node Ready without taints after recovery", func() (bool, error) {
		for _, n := range fleetNodes(t, c, "prof") {
			if readyCondition(&n).Status != corev1.ConditionTrue ||
				hasTaint(&n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) ||
				hasTaint(&n, corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, node := range []string{"prof-00000", "prof-00001", "prof-00003"} {
		if when, ok := seen.first(node, "True", recovery); ok {
			t.Logf("%s: Ready=True %.1f s after recovery began", node, when.Sub(recovery).Seconds())
		}
	}
}

// reactions records, from the fleet's watch, the first time each node showed each state: Ready
// status ("True", "False", "Unknown") and NoSchedule taints ("taint KEY").
type reactions struct {
	mu   sync.Mutex
	seen map[string][]sighting // node -> in order of arrival
}

type sighting struct {
	what string
	at   time.Time
}

func watchReactions(f *fleet.Fleet) *reactions {
	r := &reactions{seen: map[string][]sighting{}}
	f.OnNode(func(_, n *corev1.Node) {
		now := time.Now()
		var states []string
		states = append(states, string(readyCondition(n).Status))
		for _, taint := range n.Spec.Taints {
			if taint.Effect == corev1.TaintEffectNoSchedule {
				states = append(states, "taint "+taint.Key)
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range states {
			r.seen[n.Name] = append(r.seen[n.Name], sighting{s, now})
		}
	})
	return r
}

// first returns when node first showed what at or after since.
func (r *reactions) first(node, what string, since time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.seen[node] {
		if s.what == what && !s.at.Before(since) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// leaseUIDs polls one Lease and keeps every uid it had, in order.
type leaseUIDs struct {
	mu   sync.Mutex
	uids []string
}

func watchLeaseUIDs(t *testing.T, c kubernetes.Interface, name string) *leaseUIDs {
	l := &leaseUIDs{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if lease, err := c.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
				l.mu.Lock()
				if n := len(l.uids); n == 0 || l.uids[n-1] != string(lease.UID) {
					l.uids = append(l.uids, string(lease.UID))
				}
				l.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return l
}

func (l *leaseUIDs) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.uids...)
}

// forbiddenCount counts the fleet's requests the apiserver refused with 403.
type forbiddenCount struct{ n atomic.Int64 }

func (f *forbiddenCount) Request(r agent.Request) {
	if apierrors.IsForbidden(r.Err) {
		f.n.Add(1)
	}
}
func (*forbiddenCount) Heartbeat(string, error)    {}
func (*forbiddenCount) LeaseRenewed(time.Duration) {}

// testLog writes the runner's log lines to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
