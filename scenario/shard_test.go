package scenario

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/profiles"
)

// asShard runs the harness's fleet as shard s of the plan's.
func asShard(s fleetname.Shard) harnessOption {
	return func(fc *fleet.Config, rc *Config, _ *fake.Clientset) {
		fc.FirstIndex, fc.Nodes = s.Slice(rc.Plan.Nodes)
		rc.Shard = s
	}
}

func startAt(at time.Time) harnessOption {
	return func(_ *fleet.Config, rc *Config, _ *fake.Clientset) { rc.StartAt = at }
}

// waitForShardReady registers the harness's fleet and waits until its watch saw every node Ready.
func (h *harness) waitForShardReady() {
	h.t.Helper()
	<-h.fleet.Running()
	h.fleet.Scheduler().Advance(h.clock, t0.Add(5*time.Second))
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return h.fleet.Progress().Ready >= h.runner.nodes, nil }); err != nil {
		h.t.Fatalf("%d of %d nodes Ready", h.fleet.Progress().Ready, h.runner.nodes)
	}
}

// TestShardAppliesOnlyItsOwnNodesOps: shard 1/2 of the rolling profile's 4 nodes runs nodes 2 and 3,
// waits for those two only, and applies the whole plan's ops to them alone: the group "two" (nodes
// 1-2) was chosen over the whole fleet, so this shard makes node 2 NotReady and leaves node 1 to shard 0.
func TestShardAppliesOnlyItsOwnNodesOps(t *testing.T) {
	h := newHarness(t, rollingProfile, asShard(fleetname.Shard{Index: 1, Count: 2}))
	h.waitForShardReady()
	start := h.stepUntilStarted(time.Minute)
	h.advanceTo(start, 80*time.Second)
	h.finished()
	rec := h.runner.Record()
	if rec.Nodes != 2 {
		t.Errorf("record says %d nodes, want the shard's 2", rec.Nodes)
	}
	for _, a := range rec.Applied {
		if a.Node != 2 && a.Node != 3 {
			t.Errorf("shard 1/2 applied %s to node %d, not its own", a.Op, a.Node)
		}
		if a.Err != "" {
			t.Errorf("op %s on node %d failed: %s", a.Op, a.Node, a.Err)
		}
	}
	if got := applied(rec, profiles.OpNotReady); len(got) != 1 || got[2].Node != 2 {
		t.Errorf("notReady applied to %v, want node 2 only", got)
	}
	if got := applied(rec, profiles.OpLatency); len(got) != 2 {
		t.Errorf("latency applied to %d nodes, want 2", len(got))
	}
}

// TestShardsTogetherApplyThePlan: over every shard count, the shards' ops together are exactly the
// unsharded plan's, each applied by one shard: a group means the same nodes whatever the shard count.
func TestShardsTogetherApplyThePlan(t *testing.T) {
	plan := resolvePlan(t, rollingProfile)
	s := plan.Schedule()
	var all []profiles.Event
	for i := range s.Phases() {
		for ev := range s.Events(i) {
			all = append(all, ev)
		}
	}
	for count := 1; count <= plan.Nodes; count++ {
		for _, ev := range all {
			owners := 0
			for i := range count {
				r := &Runner{plan: plan, cfg: Config{Shard: fleetname.Shard{Index: i, Count: count}}}
				if r.owns(ev.Node) {
					owners++
				}
			}
			if owners != 1 {
				t.Fatalf("%d shards: %s on node %d has %d owners", count, ev.Op, ev.Node, owners)
			}
		}
	}
}

// TestStartAtBeginsThePhasesThen: with StartAt, the first phase begins at StartAt on the fleet's
// clock, not when the nodes are Ready.
func TestStartAtBeginsThePhasesThen(t *testing.T) {
	at := t0.Add(90 * time.Second)
	h := newHarness(t, rollingProfile, startAt(at))
	h.waitForShardReady()
	h.advanceTo(t0, 89*time.Second)
	if start := h.runner.Record().Start; !start.IsZero() {
		t.Fatalf("the first phase began at %v, before StartAt %v", start, at)
	}
	if start := h.stepUntilStarted(10 * time.Second); !start.Equal(at) {
		t.Errorf("the first phase began at %v, want StartAt %v", start, at)
	}
}

// TestStartAtFailsIfNodesAreNotReady: a shard whose nodes are not Ready at StartAt does not begin
// its phases out of step with the others: its run fails, saying why.
func TestStartAtFailsIfNodesAreNotReady(t *testing.T) {
	h := newHarness(t, rollingProfile, startAt(t0.Add(100*time.Millisecond)))
	<-h.fleet.Running()
	// The runner must be waiting on the clock before it moves, or its StartAt is already behind it.
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return strings.Contains(h.log.String(), "waiting for"), nil }); err != nil {
		t.Fatalf("the runner never began waiting; log:\n%s", h.log)
	}
	h.advanceTo(t0, 100*time.Millisecond) // a node is Ready about a second after it starts
	select {
	case err := <-h.runErr:
		h.runErr <- err
		if err == nil || !strings.Contains(err.Error(), "nodes Ready (with their Leases) at --start-at") {
			t.Errorf("run: %v; want it to fail at --start-at", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the run did not fail at StartAt; log:\n%s", h.log)
	}
	if rec := h.runner.Record(); len(rec.Phases) != 0 || !rec.CutShort {
		t.Errorf("record: %d phases, cut short %v; want none and true", len(rec.Phases), rec.CutShort)
	}
}
