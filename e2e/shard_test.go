package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
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
    duration: 45s
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
	bin := filepath.Join(dir, "fakelet")
	if out, err := exec.Command("go", "build", "-o", bin, "fakelet.dev/fakelet/cmd/fakelet").CombinedOutput(); err != nil {
		t.Fatalf("build fakelet: %v\n%s", err, out)
	}
	profile := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(profile, []byte(shardProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close()
	}
	if err := cp.StartPrometheus(t.Context(), controlplane.PrometheusOptions{FakeletTargets: addrs}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.StopPrometheus(context.Background()); err != nil {
			t.Errorf("stop Prometheus: %v", err)
		}
	})
	prom := &promAPI{base: cp.PrometheusURL()}
	startAt := time.Now().Add(40 * time.Second).UTC().Truncate(time.Second)
	type shard struct {
		cmd  *exec.Cmd
		out  bytes.Buffer
		dir  string
		done chan error
	}
	var shards []*shard
	for i := range 3 {
		s := &shard{dir: filepath.Join(dir, fmt.Sprint("shard-", i)), done: make(chan error, 1)}
		s.cmd = exec.Command(bin, "run", "--kubeconfig", cp.Kubeconfig, "--profile", profile,
			"--shard", fmt.Sprintf("%d/3", i), "--start-at", startAt.Format(time.RFC3339),
			"--name-prefix", "e2eshard", "--fleet", "e2e-shards", "--metrics-addr", addrs[i], "--report-dir", s.dir)
		s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { s.done <- s.cmd.Wait() }()
		shards = append(shards, s)
		t.Cleanup(func() {
			select {
			case <-s.done:
			default:
				_ = s.cmd.Process.Kill()
				<-s.done
			}
		})
	}

	// While they run, the fleet's Nodes are exactly e2eshard-00000..00011.
	want := make([]string, 12)
	for i := range want {
		want[i] = fleet.NodeName("e2eshard", i)
	}
	var names []string
	for deadline := time.Now().Add(time.Until(startAt)); time.Now().Before(deadline); time.Sleep(time.Second) {
		list, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: agent.FleetLabel + "=e2e-shards"})
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
	var direct, scraped float64
	for deadline := startAt.Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		direct = 0
		for _, a := range addrs {
			direct += counterSum(t, "http://"+a+"/metrics", "fakelet_actions_total")
		}
		var data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		}
		prom.get(t, "/api/v1/query", url.Values{"query": {"sum(fakelet_actions_total)"}}, &data)
		if len(data.Result) == 1 {
			if v, ok := data.Result[0].Value[1].(string); ok {
				fmt.Sscan(v, &scraped)
			}
		}
		if direct == 3 && scraped == 3 {
			break
		}
	}
	if direct != 3 || scraped != direct {
		t.Errorf("actions: the shards count %v, Prometheus sums %v; want 3 and 3", direct, scraped)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Until(startAt)+2*time.Minute)
	defer cancel()
	for i, s := range shards {
		select {
		case err := <-s.done:
			s.done <- err
			if err != nil {
				t.Fatalf("shard %d: %v\n%s", i, err, s.out.String())
			}
		case <-ctx.Done():
			t.Fatalf("shard %d did not end\n%s", i, s.out.String())
		}
	}

	var reports []*report.Report
	var firstPhase []time.Time
	for i, s := range shards {
		files, _ := filepath.Glob(filepath.Join(s.dir, "**", report.JSONFile))
		if direct := filepath.Join(s.dir, report.JSONFile); len(files) == 0 {
			files = []string{direct}
		}
		r, err := report.ReadFile(files[0])
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, s.out.String())
		}
		if r.Parameters.Nodes != 4 {
			t.Errorf("shard %d ran %d nodes, want 4", i, r.Parameters.Nodes)
		}
		reports = append(reports, r)
		firstPhase = append(firstPhase, r.Phases[0].Start)
		t.Logf("shard %d: phase 0 began at %s", i, r.Phases[0].Start.Format(time.RFC3339Nano))
	}
	slices.SortFunc(firstPhase, func(a, b time.Time) int { return a.Compare(b) })
	if spread := firstPhase[2].Sub(firstPhase[0]); spread > time.Second {
		t.Errorf("the shards' first phases began %v apart, want within 1 s", spread)
	}
	if d := firstPhase[0].Sub(startAt); d < 0 || d > time.Second {
		t.Errorf("the first phase began %v after --start-at, want within 1 s", d)
	}
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
