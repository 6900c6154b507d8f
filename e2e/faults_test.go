package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
)

// Faults the fleet must ride out, each on a control plane of its own: the tests kill its components
// or starve it, which the shared one must not see.

// privateControlPlane starts a control plane for one test in its temporary directory and stops it at
// the test's end.
func privateControlPlane(t *testing.T, opts controlplane.Options) *controlplane.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs a real control plane; skipped under -short")
	}
	if _, err := controlplane.FindBinaries(""); err != nil {
		t.Fatalf("end-to-end tests need the control plane binaries (make controlplane): %v", err)
	}
	opts.Dir = filepath.Join(t.TempDir(), "controlplane")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := controlplane.Down(ctx, opts.Dir); err != nil {
			t.Errorf("stop the test's control plane: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Up(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// renewedSince counts the agents whose last lease renewal is after t.
func renewedSince(rf *runningFleet, t time.Time) int {
	n := 0
	for _, a := range rf.Agents() {
		if a.Stats().LastLeaseRenewal.After(t) {
			n++
		}
	}
	return n
}

// stillRunning fails the test if the fleet's Run has returned.
func stillRunning(t *testing.T, rf *runningFleet) {
	t.Helper()
	select {
	case err := <-rf.done:
		rf.done = nil
		t.Fatalf("the fleet's run ended during the fault: %v", err)
	default:
	}
	if fails := rf.Failures(); len(fails) > 0 {
		t.Errorf("%d agents gave up for good, first: %v", len(fails), fails[0])
	}
}

// smallNodes keeps Nodes small (5 images, about 4 KB) so that the faults, not registration, load
// the control plane.
var smallNodes = agent.TemplateOptions{Images: 5}

// kubeletRecoveryBound is the latest a v1.37 kubelet renews its Lease after the apiserver is ready
// again, read from the lease controller (k8s.io/component-helpers apimachinery/lease/controller.go):
//   - a request sent just before the apiserver was ready can hang until the client timeout: an
//     apiserver without etcd holds it, one still starting may too;
//   - if that request was backoffEnsureLease's GET, the next GET waits out the backoff, at most 7 s;
//   - that GET and the PUT after it take what the apiserver takes to answer: two answers.
//
// The status loop does not shorten it: its PATCHes do not renew the Lease. So the bound is the
// client timeout, the backoff cap and two of the slowest answers the apiserver gave after it was
// ready, plus a second for the fleet's own scheduling. The test once allowed a fixed 15 s from ready to
// each node's next renewal; but a node whose held request was answered while /readyz still said no
// renewed before ready, and was counted at its next renewal 10.0-10.4 s later, or later still after
// a hung request and a backoff: about one run in six failed.
func kubeletRecoveryBound(slowestAnswer time.Duration) time.Duration {
	return agent.RequestTimeout + agent.MaxBackoff + 2*slowestAnswer + time.Second
}

// A dead apiserver refuses connections at once: 12 s down is enough for every node to miss a
// renewal (every 10 s) and for its lease loop's backoff to grow toward its 7 s cap.
func TestKubeAPIServerKilledAndRestarted(t *testing.T) {
	crashAndRecover(t, controlplane.APIServer, "crash-apiserver", 12*time.Second)
}

// Without etcd the apiserver accepts requests and holds them: a renewal hangs until the kubelet's
// 10 s client timeout. 25 s down lets every node's next renewal (within 10.4 s) time out and its
// lease loop go on to GETs that time out too.
func TestEtcdKilledAndRestarted(t *testing.T) {
	crashAndRecover(t, controlplane.Etcd, "crash-etcd", 25*time.Second)
}

// crashAndRecover kills component mid-run, keeps it down for outage and starts it again on the same
// ports: every node must renew within kubeletRecoveryBound of the apiserver being ready, the gap must show
// (failed requests counted, a renewal interval as long as the outage), and the run must go on
// without an agent giving up.
func crashAndRecover(t *testing.T, component, name string, outage time.Duration) {
	cp := privateControlPlane(t, controlplane.Options{})
	const nodes = 20
	gaps := &longestRenewal{}
	rf := runFleet(t, cp.AdminConfig(), fleet.Config{Nodes: nodes, Fleet: name, NamePrefix: name, RegisterQPS: 100, Template: smallNodes, Recorder: gaps})
	start := time.Now()
	eventually(t, 60*time.Second, "every node Ready and renewing", func() (bool, error) {
		n := renewedSince(rf, time.Time{})
		return rf.Progress().Ready == nodes && n == nodes, nil
	})
	t.Logf("%d nodes Ready and renewing after %v", nodes, time.Since(start).Round(time.Millisecond))
	failedBefore := rf.Tally().Errors()

	ctx := t.Context()
	if err := controlplane.KillComponent(ctx, cp.Dir, component); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	time.Sleep(outage) // the outage itself: nothing to wait for
	if n := renewedSince(rf, killed.Add(time.Second)); n > 0 {
		t.Errorf("%d nodes renewed their leases while %s was down", n, component)
	}
	restarting := time.Now()
	if _, err := controlplane.StartComponent(ctx, cp.Dir, component); err != nil {
		t.Fatal(err)
	}
	ready := waitReady(t, cp)
	t.Logf("%s down for %v; the apiserver ready again %v after the restart began", component,
		ready.Sub(killed).Round(time.Millisecond), ready.Sub(restarting).Round(time.Millisecond))

	// Each node's first renewal since the restart began. It can come before /readyz says ready: a
	// starting apiserver holds requests and answers them once it can. Wait past any bound a kubelet
	// could need, then hold the fleet to the bound derived from what the apiserver did once ready.
	first := make(map[string]time.Time, nodes)
	eventually(t, 2*kubeletRecoveryBound(agent.RequestTimeout), "every node renewing again", func() (bool, error) {
		for _, a := range rf.Agents() {
			if _, ok := first[a.Name()]; !ok && a.Stats().LastLeaseRenewal.After(restarting) {
				first[a.Name()] = a.Stats().LastLeaseRenewal
			}
		}
		return len(first) == nodes, nil
	})
	recovery := make([]time.Duration, 0, nodes)
	for _, at := range first {
		recovery = append(recovery, at.Sub(ready))
	}
	slices.Sort(recovery)
	slowestAnswer := gaps.slowestAnswerAfter(ready)
	bound := kubeletRecoveryBound(slowestAnswer)
	t.Logf("nodes renewed %v after the apiserver was ready (min, median, max; negative: before); a kubelet's bound %v (slowest answer since ready %v)",
		[]time.Duration{recovery[0], recovery[len(recovery)/2], recovery[len(recovery)-1]}, bound.Round(time.Millisecond), slowestAnswer.Round(time.Millisecond))
	if slowest := recovery[len(recovery)-1]; slowest > bound {
		t.Errorf("the last node renewed %v after the apiserver was ready, later than a kubelet's %v", slowest.Round(time.Millisecond), bound.Round(time.Millisecond))
	}
	failed := rf.Tally().Errors() - failedBefore
	t.Logf("%d failed requests counted during the gap; the longest interval between two renewals of a node was %v", failed, gaps.get().Round(time.Millisecond))
	if failed == 0 {
		t.Errorf("no failed requests counted while %s was down: the gap does not show", component)
	}
	if gaps.get() < outage {
		t.Errorf("the longest renewal interval is %v, shorter than the %v outage", gaps.get(), outage)
	}
	stillRunning(t, rf)
}

// longestRenewal records the longest interval between two lease renewals of a node, and when each
// successful request was answered and how long it took.
type longestRenewal struct {
	mu      sync.Mutex
	longest time.Duration
	answers []answer
}

type answer struct {
	at      time.Time
	latency time.Duration
}

func (g *longestRenewal) Request(r agent.Request) {
	if r.Err != nil {
		return
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.answers = append(g.answers, answer{now, r.Latency})
}

func (*longestRenewal) Heartbeat(string, error) {}
func (g *longestRenewal) LeaseRenewed(interval time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.longest = max(g.longest, interval)
}

func (g *longestRenewal) get() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.longest
}

// slowestAnswerAfter is the longest a successful request sent after t took to be answered.
func (g *longestRenewal) slowestAnswerAfter(t time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var slowest time.Duration
	for _, a := range g.answers {
		if a.at.Add(-a.latency).After(t) {
			slowest = max(slowest, a.latency)
		}
	}
	return slowest
}

// waitReady waits for the apiserver's /readyz and returns when it first answered ok.
func waitReady(t *testing.T, cp *controlplane.ControlPlane) time.Time {
	t.Helper()
	client, err := cp.MetricsClient()
	if err != nil {
		t.Fatal(err)
	}
	var ready time.Time
	eventually(t, 90*time.Second, "the apiserver ready", func() (bool, error) {
		resp, err := client.Get(cp.APIServerURL + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		ready = time.Now()
		return resp.StatusCode == http.StatusOK, nil
	})
	return ready
}

// TestPriorityAndFairnessRejections starts an apiserver with 15 seats in all (--max-requests-inflight
// 10, --max-mutating-requests-inflight 5: node-high's share is 3) and lets the node-high priority
// level reject what exceeds its share instead of queuing it: with queues, requests would wait past
// the kubelets' 10 s client timeout and fail as timeouts, not as 429s. (With 2 seats in all, node-high
// gets one, and on a loaded machine the fleet takes minutes to register.) Fifty kubelets registering
// (paced from 10/s, however high RegisterQPS) get 429s; client-go waits the Retry-After and retries, as the kubelet's
// client does; the fleet's tally counts every 429 the apiserver says it sent; and every node gets
// Ready and renews, with no agent giving up. The kubelet footprint's requests other than those of
// Nodes and Leases (watches, CSINodes, Events) are a kubelet's too, at priority level system
// (FlowSchema system-nodes), which rejects the same way: the fleet's 429s are both levels'.
func TestPriorityAndFairnessRejections(t *testing.T) {
	cp := privateControlPlane(t, controlplane.Options{APIServerArgs: []string{
		"--max-requests-inflight=10", "--max-mutating-requests-inflight=5",
	}})
	rejectAtNodeHigh(t, cp)
	rejectAt(t, cp, "system")
	const nodes = 50
	rf := runFleet(t, cp.AdminConfig(), fleet.Config{Nodes: nodes, Fleet: "apf", NamePrefix: "apf", RegisterQPS: 1000, Template: smallNodes})
	eventually(t, 3*time.Minute, "every node Ready and renewing under overload", func() (bool, error) {
		n := renewedSince(rf, time.Time{})
		return rf.Progress().Ready == nodes && n == nodes, nil
	})
	stillRunning(t, rf)
	// The kubelet footprint's requests at level system (an Event's retry, a watch's) may still be
	// rejected while the counts are read, and the apiserver counts a rejection before its 429
	// reaches the fleet: the two must meet once a rejection is done with.
	var throttled int64
	var nodeHigh, system float64
	deadline := time.Now().Add(time.Minute)
	for {
		nodeHigh = flowcontrolMetric(t, cp, "apiserver_flowcontrol_rejected_requests_total", "node-high")
		system = flowcontrolMetric(t, cp, "apiserver_flowcontrol_rejected_requests_total", "system")
		throttled = rf.Tally().Throttled()
		if float64(throttled) == nodeHigh+system || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second) // the apiserver's counters have no event to wait for
	}
	t.Logf("the apiserver rejected %v node-high and %v system requests; the fleet counted %d 429s and %d failed requests", nodeHigh, system, throttled, rf.Tally().Errors())
	if throttled == 0 {
		t.Fatal("no 429 reached the fleet: the apiserver was not overloaded")
	}
	if float64(throttled) != nodeHigh+system {
		t.Errorf("the fleet counted %d 429s, the apiserver rejected %v node-high and %v system requests", throttled, nodeHigh, system)
	}
}

// rejectAtNodeHigh makes the node-high priority level reject requests beyond its concurrency at once,
// and keeps the apiserver from restoring its suggested configuration.
func rejectAtNodeHigh(t *testing.T, cp *controlplane.ControlPlane) { rejectAt(t, cp, "node-high") }

// rejectAt makes priority level level reject requests beyond its concurrency at once, and keeps the
// apiserver from restoring its suggested configuration.
func rejectAt(t *testing.T, cp *controlplane.ControlPlane, level string) {
	t.Helper()
	plcs := admin(t, cp).FlowcontrolV1().PriorityLevelConfigurations()
	ctx := t.Context()
	plc, err := plcs.Get(ctx, level, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plc.Annotations == nil {
		plc.Annotations = map[string]string{}
	}
	plc.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	plc.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
	plc.Spec.Limited.LendablePercent = new(int32) // keep its one seat to itself, so that it is tight
	if _, err := plcs.Update(ctx, plc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The APF controller applies it from its informer and says so only in its gauges: the lower limit
	// reaches the nominal one once nothing is lendable, in the same digest as the reject response.
	eventually(t, 30*time.Second, level+"'s new configuration applied", func() (bool, error) {
		lower := flowcontrolMetric(t, cp, "apiserver_flowcontrol_lower_limit_seats", level)
		return lower > 0 && lower == flowcontrolMetric(t, cp, "apiserver_flowcontrol_nominal_limit_seats", level), nil
	})
}

// flowcontrolMetric sums the apiserver's counter or gauge name over the series of a priority level.
func flowcontrolMetric(t *testing.T, cp *controlplane.ControlPlane, name, level string) float64 {
	t.Helper()
	client, err := cp.MetricsClient()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cp.APIServerURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape apiserver: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(fmt.Errorf("parse apiserver metrics: %w", err))
	}
	var sum float64
	for _, m := range families[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "priority_level" && l.GetValue() == level {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() // the one it is not is nil: 0
			}
		}
	}
	return sum
}
