package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
)

// WriteTable writes the results as a Markdown table, then the ratios the targets are stated in.
func WriteTable(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| nodes | footprint | all Ready after | fleet CPU | apiserver CPU | fleet / apiserver | fleet CPU per heartbeat | etcd CPU | kcm CPU | fleet RSS | apiserver RSS | lease PUT/s | lease PUT p99 | renewal interval p50 / p99 | failed heartbeats |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		secs := r.Window.Seconds()
		core := func(name string) string { return fmt.Sprintf("%.1f%%", 100*r.CPU[name].Seconds()/secs) }
		ready := fmt.Sprintf("%.0f s", r.Register.Seconds())
		if !r.AllReady {
			ready = r.RegisteredErr
		}
		ratio := r.CPU[Fakelet].Seconds() / r.CPU[controlplane.APIServer].Seconds()
		perBeat := float64(r.CPU[Fakelet].Microseconds()) / r.Heartbeats
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %.1f%% | %s | %s | %s | %.0f MiB | %.0f MiB | %.0f | %s | %s / %s | %.0f |\n",
			r.Nodes, r.Footprint, ready, core(Fakelet), core(controlplane.APIServer), 100*ratio, nan(perBeat, "%.0f µs"),
			core(controlplane.Etcd), core(controlplane.ControllerManager),
			mib(r.RSS[Fakelet]), mib(r.RSS[controlplane.APIServer]), r.LeasePUTs/secs,
			nan(r.LeasePUTp99*1000, "%.1f ms"), nan(r.RenewalP50, "%.2f s"), nan(r.RenewalP99, "%.2f s"), r.Failures)
	}
	writeIncrementalRSS(w, results)
	fmt.Fprintln(w, "\nCPU is per cent of one core over the steady window; fleet CPU per heartbeat divides the fleet's CPU time by the lease renewals and status patches it sent in the window.")
}

// writeIncrementalRSS writes, for each footprint measured at two sizes or more, the fleet's RSS
// per node between its smallest and largest.
func writeIncrementalRSS(w io.Writer, results []Result) {
	for _, fp := range footprints(results) {
		var of []Result
		for _, r := range results {
			if r.Footprint == fp {
				of = append(of, r)
			}
		}
		if len(of) < 2 {
			continue
		}
		lo, hi := of[0], of[len(of)-1]
		perNode := float64(hi.RSS[Fakelet]-lo.RSS[Fakelet]) / float64(hi.Nodes-lo.Nodes)
		fmt.Fprintf(w, "\nIncremental fleet RSS per node in the %s footprint, (RSS at %d - RSS at %d) / %d: %.1f KiB.\n",
			fp, hi.Nodes, lo.Nodes, hi.Nodes-lo.Nodes, perNode/1024)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// footprints returns the footprints of the results in the order they first appear.
func footprints(results []Result) []agent.Footprint {
	var out []agent.Footprint
	for _, r := range results {
		if !slices.Contains(out, r.Footprint) {
			out = append(out, r.Footprint)
		}
	}
	return out
}

// ParseSizes reads a comma-separated list of fleet sizes.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d", &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("fleet size %q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}
