package scenario

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/profiles"
)

// Every built-in profile runs to its end, at 30 nodes (churn's groups count 200: 300, not under
// -short) on the fake clientset and clock: every phase begins and ends on time and every op it applies takes effect.
// Each profile has a harness of its own (clientset, clock, fleet, runner), so they run in parallel.
func TestEveryBuiltinRuns(t *testing.T) {
	nodes := regexp.MustCompile(`(?m)^  nodes: \d+$`)
	for _, name := range profiles.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(filepath.Join("..", "profiles", "builtin", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			size := "30"
			if name == "churn" {
				if testing.Short() {
					t.Skip("churn needs 300 nodes, about 40 s of CPU: not under -short")
				}
				size = "300"
			}
			small := nodes.ReplaceAll(src, []byte("  nodes: "+size))
			withPods := func(fc *fleet.Config, rc *Config, client *fake.Clientset) {
				fc.PodsPerNode = rc.Plan.Profile.Spec.PodsPerNode
				fc.PodTolerationSeconds = rc.Plan.Profile.Spec.PodTolerationSeconds
				rc.Client = client // for the workloads
			}
			h := newHarness(t, string(small), withPods)
			start := h.waitForPhases()
			var total time.Duration
			for _, p := range h.runner.plan.Profile.Spec.Phases {
				total += p.Duration.Duration
			}
			h.advanceTo(start, total)
			h.finished()
			rec := h.runner.Record()
			if want := len(h.runner.plan.Profile.Spec.Phases); len(rec.Phases) != want || rec.CutShort {
				t.Fatalf("%d phases ran (cut short %v), want %d; log:\n%s", len(rec.Phases), rec.CutShort, want, h.log)
			}
			if end := rec.Phases[len(rec.Phases)-1].End; !end.Equal(start.Add(total)) {
				t.Errorf("the last phase ended at +%v, want +%v", end.Sub(start), total)
			}
			for _, a := range rec.Applied {
				if a.Err != "" {
					t.Errorf("op %s on node %d in phase %d: %s", a.Op, a.Node, a.Phase, a.Err)
				}
			}
			if w := rec.Workloads; w != nil && (w.Created != w.Objects || w.Failed > 0) {
				t.Errorf("workloads: %d of %d objects created, %d failed (first: %s)", w.Created, w.Objects, w.Failed, w.FirstError)
			}
			t.Logf("%s: %d phases, %d ops applied over %v", name, len(rec.Phases), len(rec.Applied), total)
		})
	}
}
