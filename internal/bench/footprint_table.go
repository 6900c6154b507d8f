package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
)

// Issue 15's targets for the kubelet footprint, each against the heartbeat footprint at the same size.
const (
	// TargetExtraRSSPerNode is the most fleet RSS per node the kubelet footprint may add to the
	// heartbeat footprint's: what a node's watches, Events and pod requests keep.
	TargetExtraRSSPerNode = 16 << 10
	// TargetCPURatio is the most fleet CPU the kubelet footprint may use, as a multiple of the
	// heartbeat footprint's.
	TargetCPURatio = 1.5
)

// WriteFootprintTable writes what each footprint cost at each size, a row per fleet: the watches the
// fleet held and the apiserver served, the fleet's and the apiserver's CPU and RSS per node, and on a
// kubelet footprint's row its cost against the heartbeat footprint's at the same size; then, per
// size, whether the kubelet footprint met the targets.
func WriteFootprintTable(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| nodes | footprint | watches held by the fleet | watches served by the apiserver | fleet CPU per node (millicores) | fleet RSS per node | apiserver CPU per node (millicores) | apiserver RSS per node | fleet CPU, kubelet / heartbeat | fleet RSS per node, kubelet - heartbeat | apiserver CPU, kubelet / heartbeat | apiserver RSS, kubelet / heartbeat |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fleetCPU, extraRSS, apiCPU, apiRSS := "", "", "", ""
		if base, ok := baseline(results, r); ok {
			fleetCPU = nan(cpuRatio(r, base, Fakelet), "%.2f")
			extraRSS = fmt.Sprintf("%.1f KiB", extraRSSPerNode(r, base)/1024)
			apiCPU = nan(cpuRatio(r, base, controlplane.APIServer), "%.2f")
			apiRSS = nan(ratio(float64(r.RSS[controlplane.APIServer]), float64(base.RSS[controlplane.APIServer])), "%.2f")
		}
		fmt.Fprintf(w, "| %d | %s | %.0f | %.0f | %s | %.1f KiB | %s | %.1f KiB | %s | %s | %s | %s |\n",
			r.Nodes, r.Footprint, r.Watches, r.APIServerWatches,
			nan(millicoresPerNode(r, Fakelet), "%.3f"), perNodeKiB(r, Fakelet),
			nan(millicoresPerNode(r, controlplane.APIServer), "%.3f"), perNodeKiB(r, controlplane.APIServer),
			fleetCPU, extraRSS, apiCPU, apiRSS)
	}
	fmt.Fprintf(w, "\nThe kubelet footprint against issue 15's targets, at each size: at most %d KiB of fleet RSS per node more than the heartbeat footprint's, and at most %.1f times its fleet CPU.\n\n",
		TargetExtraRSSPerNode>>10, TargetCPURatio)
	for _, n := range sizes(results) {
		fmt.Fprintf(w, "- %d nodes: %s\n", n, verdict(results, n))
	}
	fmt.Fprintln(w, "\nPer node: the process's CPU time over the steady window in thousandths of a core, and its RSS at the window's end, divided by the nodes. Watches at the window's end: the fleet's fakelet_watches, and the apiserver's apiserver_longrunning_requests{verb=\"WATCH\"}, which also count the fleet process's own (its watch of its Nodes, its measurement's), the controller manager's and the apiserver's: all of the heartbeat footprint's.")
}

// verdict says whether the kubelet footprint met the targets at n nodes, or why there is none.
func verdict(results []Result, n int) string {
	var kubelet, heartbeat *Result
	for i := range results {
		switch r := &results[i]; {
		case r.Nodes != n:
		case r.Footprint == agent.FootprintKubelet:
			kubelet = r
		case r.Footprint == agent.FootprintHeartbeat:
			heartbeat = r
		}
	}
	var missing []string
	for _, m := range []struct {
		r  *Result
		fp agent.Footprint
	}{{heartbeat, agent.FootprintHeartbeat}, {kubelet, agent.FootprintKubelet}} {
		switch {
		case m.r == nil:
			missing = append(missing, fmt.Sprintf("the %s footprint was not measured", m.fp))
		case !m.r.AllReady:
			missing = append(missing, fmt.Sprintf("not every node was Ready in the %s footprint (%s)", m.fp, m.r.RegisteredErr))
		}
	}
	if len(missing) > 0 {
		return "no verdict: " + strings.Join(missing, "; ") + "."
	}
	extra, cpu := extraRSSPerNode(*kubelet, *heartbeat), cpuRatio(*kubelet, *heartbeat, Fakelet)
	return fmt.Sprintf("fleet RSS %.1f KiB per node more than the heartbeat footprint's: %s; fleet CPU %s times the heartbeat footprint's: %s.",
		extra/1024, met(extra <= TargetExtraRSSPerNode), nan(cpu, "%.2f"), metOrNA(cpu, cpu <= TargetCPURatio))
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// metOrNA is met(ok), or n/a for a ratio that could not be taken.
func metOrNA(v float64, ok bool) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return met(ok)
}

// baseline is the heartbeat footprint's result at r's size, for a result of the kubelet footprint.
func baseline(results []Result, r Result) (Result, bool) {
	if r.Footprint != agent.FootprintKubelet {
		return Result{}, false
	}
	for _, b := range results {
		if b.Nodes == r.Nodes && b.Footprint == agent.FootprintHeartbeat {
			return b, true
		}
	}
	return Result{}, false
}

// cpuRatio is the process's CPU in r as a multiple of its CPU in base, both per second of their
// windows.
func cpuRatio(r, base Result, process string) float64 {
	return ratio(ratio(r.CPU[process].Seconds(), r.Window.Seconds()), ratio(base.CPU[process].Seconds(), base.Window.Seconds()))
}

// extraRSSPerNode is the fleet RSS per node, in bytes, that r holds beyond base.
func extraRSSPerNode(r, base Result) float64 {
	return float64(r.RSS[Fakelet]-base.RSS[Fakelet]) / float64(r.Nodes)
}

// ratio is a/b, NaN without a b.
func ratio(a, b float64) float64 {
	if b <= 0 || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

// millicoresPerNode is the process's CPU over r's window in thousandths of a core, per node.
func millicoresPerNode(r Result, process string) float64 {
	return ratio(1000*r.CPU[process].Seconds(), r.Window.Seconds()) / float64(r.Nodes)
}

func perNodeKiB(r Result, process string) float64 {
	return float64(r.RSS[process]) / 1024 / float64(r.Nodes)
}

// sizes returns the results' fleet sizes in the order they first appear.
func sizes(results []Result) []int {
	var out []int
	for _, r := range results {
		if !slices.Contains(out, r.Nodes) {
			out = append(out, r.Nodes)
		}
	}
	return out
}
