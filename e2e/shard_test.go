package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/report"
)

// shardProfile stops three nodes chosen over the whole 12-node fleet, whichever shards own them.
const shardProfile = `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: e2e-shards}
spec:
  nodes: 12
  zones: 1
  seed: 3
  groups:
    victims: {count: 3}
  phases:
  - {name: warmup, duration: 5s}
  - name: outage
    duration: 30s
    actions:
    - {group: victims, do: stop}
`

// TestThreeShardsInLockstep: three `fakelet run --shard i/3` processes against the shared control
// plane play one profile with --start-at: their nodes are disjoint and together exactly the fleet,
// their first phases begin within a second of each other, the three stops land on the nodes the
// whole fleet's group chose, and the merged report's counts are the sums of the shards'. A Prometheus
// server scraping the three shards sums their actions to the same total as their own /metrics.
func TestThreeShardsInLockstep(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cp := controlPlane(t)
	cs := admin(t, cp)
	dir := t.TempDir()
	bin := fakeletBinary(t)
	profile := writeFile(t, dir, "profile.yaml", shardProfile)
	addrs := startPrometheusForShards(t, cp, 3)
	prom := &promAPI{base: cp.PrometheusURL()}
	startAt := time.Now().Add(40 * time.Second).UTC().Truncate(time.Second)
	shards := startShards(t, bin, 3, func(i int) []string {
		return []string{"run", "--kubeconfig", cp.Kubeconfig, "--profile", profile,
			"--shard", fmt.Sprintf("%d/3", i), "--start-at", startAt.Format(time.RFC3339),
			"--name-prefix", "e2eshard", "--fleet", "e2e-shards", "--metrics-addr", addrs[i], "--out", filepath.Join(dir, fmt.Sprint("shard-", i))}
	})

	// While they run, the fleet's Nodes are exactly e2eshard-00000..00011.
	want := make([]string, 12)
	for i := range want {
		want[i] = fleetname.NodeName("e2eshard", i)
	}
	var names []string
	for deadline := time.Now().Add(time.Until(startAt)); time.Now().Before(deadline); time.Sleep(time.Second) {
		list, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: fleetname.Label + "=e2e-shards"})
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, n := range list.Items {
			names = append(names, n.Name)
		}
		if len(names) == 12 {
			break
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("the shards' Nodes are %v, want %v", names, want)
	}

	// During the outage, Prometheus's sum of the shards' actions is the sum of their own counters: 3.
	// Each shard is scraped every 15 s: by 20 s after the stops, 10 s before the outage ends.
	var direct, scraped float64
	for deadline := startAt.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		direct = 0
		for _, a := range addrs {
			direct += counterSum(t, "http://"+a+"/metrics", "fakelet_actions_total")
		}
		if v, ok := prom.sample(t, "sum(fakelet_actions_total)"); ok {
			scraped = v
		}
		if direct == 3 && scraped == 3 {
			break
		}
	}
	if direct != 3 || scraped != direct {
		t.Errorf("actions: the shards count %v, Prometheus sums %v; want 3 and 3", direct, scraped)
	}

	waitShards(t, shards, time.Until(startAt)+2*time.Minute)
	reports := shardReports(t, shards, 4)
	checkLockstep(t, reports, startAt)
	merged, err := report.Merge(reports)
	if err != nil {
		t.Fatal(err)
	}
	transitions, actions := 0, 0
	for _, r := range reports {
		transitions += r.Nodes.Transitions
	}
	if merged.Parameters.Nodes != 12 || merged.Nodes.Transitions != transitions {
		t.Errorf("merged: %d nodes, %d transitions; want 12 and %d", merged.Parameters.Nodes, merged.Nodes.Transitions, transitions)
	}
	seen := map[string]bool{}
	for _, re := range merged.Reactions {
		k := re.Phase + "/" + re.Group + "/" + re.Op
		if re.Op == "stop" && !seen[k] {
			seen[k] = true
			actions += re.Actions
		}
	}
	if actions != 3 {
		t.Errorf("the merged report has %d stops, want the group's 3 across the shards", actions)
	}
}

// shardProcess is one `fakelet run --shard` process.
type shardProcess struct {
	cmd    *exec.Cmd
	out    syncBuffer
	dir    string        // its --out
	exited chan struct{} // closed once it exited, with err
	err    error
}

// startPrometheusForShards starts the control plane's Prometheus server (Debian's prometheus, with
// deploy/prometheus's configuration) scraping n fakelet processes, and returns the free loopback
// addresses they are to serve their metrics on; the test's cleanup stops it.
func startPrometheusForShards(t *testing.T, cp *controlplane.ControlPlane, n int) []string {
	t.Helper()
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Fatalf("this test needs a Prometheus server: %v; install Debian's prometheus package (apt-get install prometheus), as .ci/run does", err)
	}
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close()
	}
	if err := cp.StartPrometheus(t.Context(), controlplane.PrometheusOptions{FakeletTargets: addrs, FreshData: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.StopPrometheus(context.Background()); err != nil {
			t.Errorf("stop Prometheus: %v", err)
		}
	})
	return addrs
}

// startShards starts n fakelet processes with args(i), each writing its report under --out;
// the test's cleanup kills any still running.
func startShards(t *testing.T, bin string, n int, args func(i int) []string) []*shardProcess {
	t.Helper()
	var shards []*shardProcess
	for i := range n {
		a := args(i)
		s := &shardProcess{cmd: exec.Command(bin, a...), exited: make(chan struct{})}
		for j := range a[:len(a)-1] {
			if a[j] == "--out" {
				s.dir = a[j+1]
			}
		}
		s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { s.err = s.cmd.Wait(); close(s.exited) }()
		shards = append(shards, s)
		t.Cleanup(func() {
			select {
			case <-s.exited:
			default:
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		})
	}
	return shards
}

// waitShards waits up to limit for every shard to end, and fails the test unless each succeeded.
func waitShards(t *testing.T, shards []*shardProcess, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	for i, s := range shards {
		select {
		case <-s.exited:
			if s.err != nil {
				t.Fatalf("shard %d: %v\n%s", i, s.err, s.out.String())
			}
		case <-ctx.Done():
			t.Fatalf("shard %d did not end\n%s", i, s.out.String())
		}
	}
}

// shardReports reads each shard's report.json, and checks that each ran nodes of the fleet.
func shardReports(t *testing.T, shards []*shardProcess, nodes int) []*report.Report {
	t.Helper()
	var reports []*report.Report
	for i, s := range shards {
		files, _ := filepath.Glob(filepath.Join(s.dir, "**", report.JSONFile))
		if direct := filepath.Join(s.dir, report.JSONFile); len(files) == 0 {
			files = []string{direct}
		}
		r, err := report.ReadFile(files[0])
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, s.out.String())
		}
		if r.Parameters.Nodes != nodes {
			t.Errorf("shard %d ran %d nodes, want %d", i, r.Parameters.Nodes, nodes)
		}
		reports = append(reports, r)
	}
	return reports
}

// checkLockstep: the shards' first phases began within a second of each other, and within a second
// after startAt.
func checkLockstep(t *testing.T, reports []*report.Report, startAt time.Time) {
	t.Helper()
	var firstPhase []time.Time
	for i, r := range reports {
		if len(r.Phases) == 0 {
			t.Fatalf("shard %d ran no phase", i)
		}
		firstPhase = append(firstPhase, r.Phases[0].Start)
		t.Logf("shard %d: phase 0 began at %s", i, r.Phases[0].Start.Format(time.RFC3339Nano))
	}
	slices.SortFunc(firstPhase, func(a, b time.Time) int { return a.Compare(b) })
	if spread := firstPhase[len(firstPhase)-1].Sub(firstPhase[0]); spread > time.Second {
		t.Errorf("the shards' first phases began %v apart, want within 1 s", spread)
	}
	if d := firstPhase[0].Sub(startAt); d < 0 || d > time.Second {
		t.Errorf("the first phase began %v after the start %s, want within 1 s", d, startAt.Format(time.RFC3339Nano))
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// counterSum adds up every series of a counter in a Prometheus text exposition at url; a shard that
// has not served yet counts 0.
func counterSum(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			f := strings.Fields(line)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}
