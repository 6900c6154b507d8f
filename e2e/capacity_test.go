package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/report"
)

// TestCapacityBreaksWhereTheAPIServerRejects drives fakelet capacity against a control plane whose
// node-high priority level rejects what its few seats cannot take at once, with short steps, and
// checks its answer against the apiserver's own counter of node-high rejections, sampled by the test
// every half second: every step's count is the apiserver's over its hold, the first step (one node)
// holds, only the last step breaks, and the answer is the step before it.
func TestCapacityBreaksWhereTheAPIServerRejects(t *testing.T) {
	cp := privateControlPlane(t, controlplane.Options{APIServerArgs: []string{
		"--max-requests-inflight=10", "--max-mutating-requests-inflight=5",
	}})
	rejectAtNodeHigh(t, cp)
	samples := sampleRejections(t, cp)

	p := startFakelet(t, "capacity", "--kubeconfig", cp.Kubeconfig, "--fleet", "capacity", "--name-prefix", "capacity",
		"--start", "1", "--step", "200", "--max", "801", "--settle", "10s", "--hold", "12s", "--lease-duration", "20s",
		"--register-qps", "500", "--images", "5", "--scrape-interval", "5s", "--out", "report")
	if code := p.wait(4 * time.Minute); code != 0 {
		t.Fatalf("fakelet capacity exited %d", code)
	}
	r, err := report.ReadFile(p.cmd.Dir + "/report/report.json")
	if err != nil {
		t.Fatal(err)
	}
	c := r.Capacity
	if c == nil || c.Broke == nil {
		t.Fatalf("no step broke a level up to 801 nodes with node-high rejecting: %+v", c)
	}
	if c.Held == 0 {
		// One node renews every 5 s, alone: nothing it sends can meet another request in a seat.
		t.Errorf("even the first step, of one node, broke: %s", c.Answer())
	}
	t.Logf("capacity: %s", c.Answer())
	for i, st := range c.Steps {
		var apf *report.Level
		broken := false
		for j, l := range st.Levels {
			broken = broken || l.Broken
			if l.Level == "apf-rejections" {
				apf = &st.Levels[j]
			}
		}
		if apf == nil {
			t.Fatalf("step of %d nodes has no apf-rejections level: %+v", st.Nodes, st.Levels)
		}
		// The step's counts are those of the scrapes fakelet starts at each end of the hold, which
		// the apiserver answers up to a few seconds later on a busy machine: the apiserver's count
		// from 6 s into the hold to its end is at most the step's, and from just before it to 6 s
		// after it at least (the test's samples are half a second apart).
		inner := samples.increase(st.From.Add(6*time.Second), st.To)
		outer := samples.increase(st.From.Add(-time.Second), st.To.Add(6*time.Second))
		t.Logf("%d nodes: apf-rejections %v; the apiserver's node-high rejections within the hold %v, around it %v", st.Nodes, apf.Value, inner, outer)
		if apf.Value < inner || apf.Value > outer {
			t.Errorf("%d nodes: %v APF rejections reported, the apiserver rejected %v to %v node-high requests in the hold", st.Nodes, apf.Value, inner, outer)
		}
		last := i == len(c.Steps)-1
		if broken != last {
			t.Errorf("step %d of %d (%d nodes) broken %v: only the last step breaks", i+1, len(c.Steps), st.Nodes, broken)
		}
		if last && apf.Broken && apf.Value == 0 {
			t.Errorf("the apf-rejections level broke with no rejection")
		}
	}
	broke := c.Steps[len(c.Steps)-1]
	wantHeld := 0
	if len(c.Steps) > 1 {
		wantHeld = c.Steps[len(c.Steps)-2].Nodes
	}
	if c.Held != wantHeld {
		t.Errorf("held %d, want %d, the step before the broken one", c.Held, wantHeld)
	}
	var first *report.Level
	for j := range broke.Levels {
		if broke.Levels[j].Broken {
			first = &broke.Levels[j]
			break
		}
	}
	if first == nil || c.Broke.Level != first.Level || c.Broke.Value != first.Value {
		t.Errorf("broke %+v, want the broken step's first broken level %+v", c.Broke, first)
	}
	if !strings.Contains(p.stdout.String(), "capacity: "+c.Answer()) {
		t.Errorf("the answer is not printed")
	}
	if n := leasesNamed(t, admin(t, cp), "capacity-"); n != 0 {
		t.Errorf("%d of the fleet's Leases left behind", n)
	}
}

// rejectionSamples are the apiserver's node-high rejections, sampled over time.
type rejectionSamples struct {
	mu     sync.Mutex
	at     []time.Time
	values []float64
}

// increase is the counter's increase from the last sample at or before from to the last at or
// before to.
func (s *rejectionSamples) increase(from, to time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := func(t time.Time) float64 {
		out := 0.0
		for i, at := range s.at {
			if !at.After(t) {
				out = s.values[i]
			}
		}
		return out
	}
	return v(to) - v(from)
}

// sampleRejections samples the apiserver's apiserver_flowcontrol_rejected_requests_total of
// node-high every half second until the test ends.
func sampleRejections(t *testing.T, cp *controlplane.ControlPlane) *rejectionSamples {
	t.Helper()
	client, err := cp.MetricsClient()
	if err != nil {
		t.Fatal(err)
	}
	s := &rejectionSamples{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := nodeHighRejected(ctx, client, cp.APIServerURL); err == nil {
				s.mu.Lock()
				s.at, s.values = append(s.at, time.Now()), append(s.values, v)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func nodeHighRejected(ctx context.Context, client *http.Client, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape apiserver: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, m := range families["apiserver_flowcontrol_rejected_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "priority_level" && l.GetValue() == "node-high" {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum, nil
}
