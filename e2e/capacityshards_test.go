package e2e

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/report"
)

// TestCapacityInTwoShards runs fakelet capacity as two shard processes agreeing on their start by
// Lease, with two short steps: both give the same answer after the same steps, every step's hold
// began at the same instant in both, fakelet report merge finds that answer again from their
// reports, and nothing they created is left: Nodes' Leases, the start Lease, the verdicts.
func TestCapacityInTwoShards(t *testing.T) {
	cp := controlPlane(t)
	cs := admin(t, cp)
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fakelet-capshards-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(t.Context(), ns.Name, metav1.DeleteOptions{}) })

	var shards []*fakeletProcess
	for _, shard := range []string{"0/2", "1/2"} {
		shards = append(shards, startFakelet(t, "capacity", "--kubeconfig", cp.Kubeconfig, "--fleet", "capshards", "--name-prefix", "capshards",
			"--shard", shard, "--start-at", "auto", "--start-delay", "20s", "--coordination-namespace", ns.Name, "--verdict-timeout", "5s",
			"--start", "4", "--step", "4", "--max", "8", "--settle", "3s", "--hold", "10s", "--lease-duration", "20s",
			"--register-qps", "50", "--images", "5", "--scrape-interval", "5s", "--out", "report"))
	}
	var reports []*report.Report
	var paths []string
	for i, p := range shards {
		if code := p.wait(2 * time.Minute); code != 0 {
			t.Fatalf("shard %d/2 exited %d", i, code)
		}
		path := filepath.Join(p.cmd.Dir, "report", "report.json")
		r, err := report.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		reports, paths = append(reports, r), append(paths, path)
	}
	a, b := reports[0].Capacity, reports[1].Capacity
	if a == nil || b == nil || a.Shards == nil || a.Shards.Shard != "0/2" || b.Shards.Shard != "1/2" {
		t.Fatalf("the shards' capacity answers %+v and %+v", a, b)
	}
	t.Logf("capacity: %s", a.Answer())
	if a.Answer() != b.Answer() || len(a.Steps) != len(b.Steps) {
		t.Errorf("shard 0/2: %s after %d steps; shard 1/2: %s after %d", a.Answer(), len(a.Steps), b.Answer(), len(b.Steps))
	}
	for k := range min(len(a.Steps), len(b.Steps)) {
		if !a.Steps[k].From.Equal(b.Steps[k].From) || !a.Steps[k].To.Equal(b.Steps[k].To) {
			t.Errorf("the step of %d nodes held from %v to %v in shard 0/2, from %v to %v in 1/2",
				a.Steps[k].Nodes, a.Steps[k].From, a.Steps[k].To, b.Steps[k].From, b.Steps[k].To)
		}
	}
	if n := reports[0].Parameters.Nodes + reports[1].Parameters.Nodes; n != a.Steps[len(a.Steps)-1].Nodes {
		t.Errorf("the shards ran %d nodes at the last step, want %d", n, a.Steps[len(a.Steps)-1].Nodes)
	}

	merge := startFakelet(t, append([]string{"report", "merge", "--out", "merged.json"}, paths...)...)
	if code := merge.wait(time.Minute); code != 0 {
		t.Fatalf("fakelet report merge exited %d", code)
	}
	merged, err := report.ReadFile(filepath.Join(merge.cmd.Dir, "merged.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m := merged.Capacity; m == nil || m.Answer() != a.Answer() || !reflect.DeepEqual(m.Broke, a.Broke) {
		t.Errorf("merged answer %+v, the shards' %q", m, a.Answer())
	}

	leases, err := cs.CoordinationV1().Leases(ns.Name).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		t.Errorf("Lease %s left in %s", l.Name, ns.Name)
	}
	if n := leasesNamed(t, cs, "capshards-"); n != 0 {
		t.Errorf("%d of the fleet's Leases left behind", n)
	}
}
