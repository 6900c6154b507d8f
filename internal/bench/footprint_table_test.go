package bench

import (
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
)

// fleetResult is one fleet's window: the fleet's and the apiserver's CPU over it and RSS at its end.
func fleetResult(nodes int, fp agent.Footprint, window, fleetCPU, apiCPU time.Duration, fleetRSS, apiRSS int64) Result {
	return Result{
		Nodes: nodes, Footprint: fp, AllReady: true, Window: window,
		CPU: map[string]time.Duration{Fakelet: fleetCPU, controlplane.APIServer: apiCPU},
		RSS: map[string]int64{Fakelet: fleetRSS, controlplane.APIServer: apiRSS},
	}
}

// hasLines fails t for each line of want that is not a whole line of got.
func hasLines(t *testing.T, got string, want ...string) {
	t.Helper()
	lines := strings.Split(got, "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || l == w
		}
		if !found {
			t.Errorf("no line\n%s\nin\n%s", w, got)
		}
	}
}

func TestFootprintTableSetsTheKubeletFootprintAgainstTheHeartbeatOne(t *testing.T) {
	const kib, mib = 1 << 10, 1 << 20
	s := time.Second
	met := fleetResult(1000, agent.FootprintKubelet, 30*s, 4200*time.Millisecond, 18*s, 110*mib, 550*mib)
	met.Watches, met.APIServerWatches = 6000, 6040
	hb := fleetResult(1000, agent.FootprintHeartbeat, 60*s, 6*s, 30*s, 100*mib, 500*mib)
	hb.APIServerWatches = 40
	notReady := fleetResult(10000, agent.FootprintKubelet, 60*s, 60*s, 60*s, 600*mib, 3000*mib)
	notReady.AllReady, notReady.RegisteredErr = false, "not every node Ready within 10m0s"
	results := []Result{
		hb, met,
		fleetResult(2000, agent.FootprintKubelet, 60*s, 6*s, 30*s, 100*mib, 500*mib),
		fleetResult(5000, agent.FootprintHeartbeat, 60*s, 12*s, 60*s, 200*mib, 1500*mib),
		// 20 KiB more per node, 1.6 times the CPU.
		fleetResult(5000, agent.FootprintKubelet, 60*s, 19200*time.Millisecond, 66*s, 200*mib+5000*20*kib, 1650*mib),
		fleetResult(10000, agent.FootprintHeartbeat, 60*s, 20*s, 60*s, 300*mib, 3000*mib),
		notReady,
	}
	var b strings.Builder
	WriteFootprintTable(&b, results)
	hasLines(t, b.String(),
		"| nodes | footprint | watches held by the fleet | watches served by the apiserver | fleet CPU per node (millicores) | fleet RSS per node | apiserver CPU per node (millicores) | apiserver RSS per node | fleet CPU, kubelet / heartbeat | fleet RSS per node, kubelet - heartbeat | apiserver CPU, kubelet / heartbeat | apiserver RSS, kubelet / heartbeat |",
		// 100 and 500 millicores over 1000 nodes; 100 and 500 MiB over 1000 nodes.
		"| 1000 | heartbeat | 0 | 40 | 0.100 | 102.4 KiB | 0.500 | 512.0 KiB |  |  |  |  |",
		// 4.2 s over a 30 s window is 140 millicores, 1.4 times 100: windows of different lengths
		// are compared per second. 10 MiB more over 1000 nodes.
		"| 1000 | kubelet | 6000 | 6040 | 0.140 | 112.6 KiB | 0.600 | 563.2 KiB | 1.40 | 10.2 KiB | 1.20 | 1.10 |",
		"| 2000 | kubelet | 0 | 0 | 0.050 | 51.2 KiB | 0.250 | 256.0 KiB |  |  |  |  |",
		"| 5000 | kubelet | 0 | 0 | 0.064 | 61.0 KiB | 0.220 | 337.9 KiB | 1.60 | 20.0 KiB | 1.10 | 1.10 |",
		"The kubelet footprint against issue 15's targets, at each size: at most 16 KiB of fleet RSS per node more than the heartbeat footprint's, and at most 1.5 times its fleet CPU.",
		"- 1000 nodes: fleet RSS 10.2 KiB per node more than the heartbeat footprint's: met; fleet CPU 1.40 times the heartbeat footprint's: met.",
		"- 2000 nodes: no verdict: the heartbeat footprint was not measured.",
		"- 5000 nodes: fleet RSS 20.0 KiB per node more than the heartbeat footprint's: not met; fleet CPU 1.60 times the heartbeat footprint's: not met.",
		"- 10000 nodes: no verdict: not every node was Ready in the kubelet footprint (not every node Ready within 10m0s).",
	)
}

// The targets' bounds are met: 16 KiB more per node and 1.5 times the CPU.
func TestFootprintTargetsAreInclusive(t *testing.T) {
	const kib, mib = 1 << 10, 1 << 20
	s := time.Second
	results := []Result{
		fleetResult(1000, agent.FootprintHeartbeat, 60*s, 6*s, 30*s, 100*mib, 500*mib),
		fleetResult(1000, agent.FootprintKubelet, 60*s, 9*s, 30*s, 100*mib+1000*16*kib, 500*mib),
	}
	want := "fleet RSS 16.0 KiB per node more than the heartbeat footprint's: met; fleet CPU 1.50 times the heartbeat footprint's: met."
	if got := verdict(results, 1000); got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
	results[0].CPU[Fakelet] = 0
	if got := verdict(results, 1000); !strings.HasSuffix(got, "fleet CPU n/a times the heartbeat footprint's: n/a.") {
		t.Errorf("verdict without the heartbeat footprint's CPU: %q", got)
	}
}

// Every fleet's row in the main table says which footprint it ran, and the incremental RSS per node
// is taken within one footprint.
func TestTableSaysEachRowsFootprint(t *testing.T) {
	const kib, mib = 1 << 10, 1 << 20
	s := time.Second
	results := []Result{
		fleetResult(1000, agent.FootprintHeartbeat, 60*s, 6*s, 30*s, 100*mib, 500*mib),
		fleetResult(1000, agent.FootprintKubelet, 60*s, 6*s, 30*s, 110*mib, 500*mib),
		fleetResult(5000, agent.FootprintHeartbeat, 60*s, 6*s, 30*s, 100*mib+4000*20*kib, 500*mib),
		fleetResult(5000, agent.FootprintKubelet, 60*s, 6*s, 30*s, 110*mib+4000*35*kib, 500*mib),
	}
	var b strings.Builder
	WriteTable(&b, results)
	if !strings.HasPrefix(b.String(), "| nodes | footprint | all Ready after |") {
		t.Errorf("header %q", strings.SplitN(b.String(), "\n", 2)[0])
	}
	for i, fp := range []string{"heartbeat", "kubelet", "heartbeat", "kubelet"} {
		row := strings.Split(b.String(), "\n")[2+i]
		if cells := strings.Split(row, " | "); len(cells) < 2 || cells[1] != fp {
			t.Errorf("row %d %q: want the %s footprint in its second cell", i, row, fp)
		}
	}
	hasLines(t, b.String(),
		// No heartbeats in the window: no CPU per heartbeat.
		"| 1000 | heartbeat | 0 s | 10.0% | 50.0% | 20.0% | n/a | 0.0% | 0.0% | 100 MiB | 500 MiB | 0 | 0.0 ms | 0.00 s / 0.00 s | 0 |",
		"Incremental fleet RSS per node in the heartbeat footprint, (RSS at 5000 - RSS at 1000) / 4000: 20.0 KiB.",
		"Incremental fleet RSS per node in the kubelet footprint, (RSS at 5000 - RSS at 1000) / 4000: 35.0 KiB.")
}
