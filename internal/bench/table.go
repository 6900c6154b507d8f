package bench

import (
	"fmt"
	"io"
	"strings"

	"fakelet.dev/fakelet/controlplane"
)

// WriteTable writes the results as a Markdown table, then the ratios the targets are stated in.
func WriteTable(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| nodes | all Ready after | fleet CPU | apiserver CPU | fleet / apiserver | fleet CPU per heartbeat | etcd CPU | kcm CPU | fleet RSS | apiserver RSS | lease PUT/s | lease PUT p99 | renewal interval p50 / p99 | failed heartbeats |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		secs := r.Window.Seconds()
		core := func(name string) string { return fmt.Sprintf("%.1f%%", 100*r.CPU[name].Seconds()/secs) }
		ready := fmt.Sprintf("%.0f s", r.Register.Seconds())
		if !r.AllReady {
			ready = r.RegisteredErr
		}
		ratio := r.CPU[Fakelet].Seconds() / r.CPU[controlplane.APIServer].Seconds()
		perBeat := float64(r.CPU[Fakelet].Microseconds()) / r.Heartbeats
		fmt.Fprintf(w, "| %d | %s | %s | %s | %.1f%% | %s | %s | %s | %.0f MiB | %.0f MiB | %.0f | %s | %s / %s | %.0f |\n",
			r.Nodes, ready, core(Fakelet), core(controlplane.APIServer), 100*ratio, nan(perBeat, "%.0f µs"),
			core(controlplane.Etcd), core(controlplane.ControllerManager),
			mib(r.RSS[Fakelet]), mib(r.RSS[controlplane.APIServer]), r.LeasePUTs/secs,
			nan(r.LeasePUTp99*1000, "%.1f ms"), nan(r.RenewalP50, "%.2f s"), nan(r.RenewalP99, "%.2f s"), r.Failures)
	}
	if len(results) >= 2 {
		lo, hi := results[0], results[len(results)-1]
		perNode := float64(hi.RSS[Fakelet]-lo.RSS[Fakelet]) / float64(hi.Nodes-lo.Nodes)
		fmt.Fprintf(w, "\nIncremental fleet RSS per node, (RSS at %d - RSS at %d) / %d: %.1f KiB.\n",
			hi.Nodes, lo.Nodes, hi.Nodes-lo.Nodes, perNode/1024)
	}
	fmt.Fprintln(w, "\nCPU is per cent of one core over the steady window; fleet CPU per heartbeat divides the fleet's CPU time by the lease renewals and status patches it sent in the window.")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

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
