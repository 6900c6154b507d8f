package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/storm"
	"fakelet.dev/fakelet/profiles"
)

const restartAll = `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata:
  name: e2e-restart
  description: Restart every kubelet of eight at once.
spec:
  nodes: 8
  groups:
    all: {percent: 100}
  phases:
  - name: steady
    duration: 5s
  - name: restart
    duration: 15s
    actions:
    - {group: all, do: restart}
`

// TestReportOfARestartStorm restarts a fleet of the kubelet footprint at once and checks the
// report's storm against the apiserver: the registrations it counts are the apiserver's 409s for
// Nodes, its Lease GETs the apiserver's, its rejections the apiserver's; and every Node's Ready
// condition was last reported within the storm, before the time the report gives for all back.
// The phases are short: the runner starts the first only once every node is Ready, and the restart
// phase holds the storm, which must be over within 10 s, and 5 s more.
func TestReportOfARestartStorm(t *testing.T) {
	cp := controlPlane(t)
	prof, err := profiles.Parse("e2e-restart.yaml", []byte(restartAll))
	if err != nil {
		t.Fatal(err)
	}
	// Keep: the Nodes outlive the run, for their conditions; the test deletes them.
	cfg := fleet.Config{Fleet: "restart", NamePrefix: "restart", RegisterQPS: 50, Keep: true, Zones: 1, ZoneOf: profiles.ZoneOf,
		Footprint: agent.FootprintKubelet}
	plan, f, s := measuredFleet(t, cp, prof, cfg, measure.Options{ScrapeInterval: 5 * time.Second})
	t.Cleanup(func() {
		if err := f.Cleanup(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := playMeasured(t, ctx, cp, s, plan, f, record.Parameters{Nodes: plan.Nodes, Mode: "lease", Footprint: "kubelet"}, "e2e", nil)

	if len(r.Storms) != 1 {
		t.Fatalf("%d storms, want the restart's", len(r.Storms))
	}
	st := r.Storms[0]
	if st.Phase != "restart" || st.Nodes != plan.Nodes || st.Recovered != plan.Nodes || st.Causes[agent.DisruptedProcess] != plan.Nodes {
		t.Errorf("storm in %s of %d nodes (%d back, causes %v), want all %d restarted in restart", st.Phase, st.Nodes, st.Recovered, st.Causes, plan.Nodes)
	}
	if st.AllBackSeconds == nil || *st.AllBackSeconds > 10 {
		t.Fatalf("all back after %v s, want within 10 s of the restart", st.AllBackSeconds)
	}
	restartAt := r.Phases[1].Start
	if d := st.Start.Sub(restartAt); d < 0 || d > time.Second {
		t.Errorf("the storm began %v after the restart phase", d)
	}

	// What the fleet counted in the storm is what the apiserver counted over the run: a first start
	// creates its Node (201) and finds no Lease (404), so only the restart's registrations get 409
	// and only its new lease controllers GET a Lease that exists. (The restart phase's own counts
	// would not do: its first scrape may come after the storm's first requests.)
	fleetCount := map[string]int{}
	for _, q := range st.Requests {
		fleetCount[q.Verb+" "+q.Resource] = q.Count
	}
	server := map[string]float64{}
	var rejected float64
	phase := r.Load.Run
	for _, q := range phase.Requests {
		server[fmt.Sprintf("%s %s %s", q.Verb, q.Resource, q.Code)] += q.Count
	}
	for _, pl := range phase.PriorityLevels {
		rejected += pl.Rejected
	}
	for fleetKind, serverKind := range map[string]string{"create nodes": "POST nodes 409", "get leases": "GET leases 200"} {
		if fleetCount[fleetKind] != plan.Nodes || server[serverKind] != float64(plan.Nodes) {
			t.Errorf("%s: %d in the storm, %v %s at the apiserver; want %d", fleetKind, fleetCount[fleetKind], server[serverKind], serverKind, plan.Nodes)
		}
	}
	for _, w := range kubeletWatches {
		if n := fleetCount["watch "+w]; n < plan.Nodes {
			t.Errorf("watch %s: %d in the storm, want one per node at least", w, n)
		}
	}
	if st.APFRejected == nil || *st.APFRejected != rejected || st.Throttled != 0 {
		t.Errorf("APF rejected %v in the storm, %v in the run; 429s %d", st.APFRejected, rejected, st.Throttled)
	}

	// Each Node's Ready condition was last reported by its new kubelet, within the storm.
	c := admin(t, cp)
	for _, n := range fleetNodes(t, c, "restart") {
		ready := readyCondition(&n)
		// Condition times are kept to the second.
		if ready.Status != corev1.ConditionTrue || ready.LastHeartbeatTime.Time.Before(st.Start.Truncate(time.Second)) ||
			ready.LastHeartbeatTime.Time.After(st.End) {
			t.Errorf("%s: Ready %s last reported at %v, want True within the storm %v to %v", n.Name, ready.Status,
				ready.LastHeartbeatTime.Time, st.Start, st.End)
		}
	}
}

// TestAPIServerRestartIsAWatchStorm: an apiserver restart breaks every watch of a kubelet-footprint
// fleet, which lists them all again once it is back: one storm, caused by watches, that ends when
// every node holds its watches again, as the apiserver's count of open watches says.
func TestAPIServerRestartIsAWatchStorm(t *testing.T) {
	cp := privateControlPlane(t, controlplane.Options{})
	const nodes = 5
	storms := storm.NewRecorder()
	caught := &caughtUp{nodes: map[string]bool{}}
	rf := runFleet(t, cp.AdminConfig(), fleet.Config{Nodes: nodes, Fleet: "rewatch", NamePrefix: "rewatch", RegisterQPS: 50,
		Footprint: agent.FootprintKubelet, Recorder: agent.Recorders{storms, caught}})
	holding := func() (bool, error) {
		now := longrunningWatches(t, cp)
		for _, r := range kubeletWatches {
			if now[r] < nodes {
				return false, nil
			}
		}
		return true, nil
	}
	eventually(t, 60*time.Second, "every node holding its watches", holding)
	// The apiserver may hold a node's watches before its kubelet is caught up (its streams past their
	// initial lists, its Ready reported): a kubelet that was not caught up is not disrupted.
	eventually(t, 60*time.Second, "every node's kubelet caught up", func() (bool, error) { return caught.count() == nodes, nil })
	if s, _ := storms.Storms(); len(s) != 0 {
		t.Fatalf("storms before the restart: %+v", s)
	}

	ctx := t.Context()
	// The time before the kill: the watches break as the signal lands, before KillComponent returns.
	killed := time.Now()
	if err := controlplane.KillComponent(ctx, cp.Dir, "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the outage itself: nothing to wait for
	if _, err := controlplane.StartComponent(ctx, cp.Dir, "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cp)
	eventually(t, 60*time.Second, "the storm over", func() (bool, error) {
		s, _ := storms.Storms()
		return len(s) == 1 && !s[0].End.IsZero(), nil
	})
	if ok, _ := holding(); !ok {
		t.Errorf("the storm ended before the apiserver held every node's watches: %v", longrunningWatches(t, cp))
	}
	s, _ := storms.Storms()
	st := s[0]
	t.Logf("storm from %v after the kill, all back %v later: causes %v", st.Start.Sub(killed).Round(time.Millisecond),
		st.End.Sub(st.Start).Round(time.Millisecond), st.Causes)
	if st.Nodes != nodes || st.Causes[agent.DisruptedWatch] < nodes || st.Causes[agent.DisruptedProcess] != 0 {
		t.Errorf("storm of %d nodes, causes %v; want every node's watches", st.Nodes, st.Causes)
	}
	if st.Start.Before(killed) {
		t.Errorf("the storm began %v before the kill", killed.Sub(st.Start))
	}
	relists := 0
	for _, sec := range st.Seconds {
		for _, w := range kubeletWatches {
			relists += sec.Requests["watch "+w]
		}
	}
	if relists < nodes*len(kubeletWatches) {
		t.Errorf("%d watches opened in the storm, want every node's %d again at least", relists, len(kubeletWatches))
	}
	stillRunning(t, rf)
}

// caughtUp keeps which nodes' kubelets are caught up, as the agents tell their recovery recorders.
type caughtUp struct {
	mu    sync.Mutex
	nodes map[string]bool
}

func (c *caughtUp) Request(agent.Request)      {}
func (c *caughtUp) Heartbeat(string, error)    {}
func (c *caughtUp) LeaseRenewed(time.Duration) {}

func (c *caughtUp) Disrupted(node, _ string, _ time.Time) { c.set(node, false) }
func (c *caughtUp) Recovered(node string, _ time.Time)    { c.set(node, true) }

func (c *caughtUp) set(node string, up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[node] = up
}

func (c *caughtUp) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, up := range c.nodes {
		if up {
			n++
		}
	}
	return n
}
