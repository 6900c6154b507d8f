package bench

import (
	"fmt"
	"io"
)

// WriteStandInTable writes the results of fleets against the stand-in as a Markdown table: the
// fleet's own costs, shared with no co-located apiserver, and the stand-in's beside them.
func WriteStandInTable(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| nodes | footprint | all Ready after | fleet CPU | fleet CPU per renewal | fleet RSS | RSS per node | renewal interval p50 / p99 | send lag p99 | stand-in CPU | stand-in RSS | lease PUT/s | failed heartbeats |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		secs := r.Window.Seconds()
		ready := fmt.Sprintf("%.0f s", r.Register.Seconds())
		if !r.AllReady {
			ready = r.RegisteredErr
		}
		perRenewal := float64(r.CPU[Fakelet].Microseconds()) / r.LeasePUTs
		fmt.Fprintf(w, "| %d | %s | %s | %.1f%% | %s | %.0f MiB | %.1f KiB | %s / %s | %s | %.1f%% | %.0f MiB | %.0f | %.0f |\n",
			r.Nodes, r.Footprint, ready, 100*r.CPU[Fakelet].Seconds()/secs, nan(perRenewal, "%.0f µs"),
			mib(r.RSS[Fakelet]), float64(r.RSS[Fakelet])/1024/float64(r.Nodes),
			nan(r.RenewalP50, "%.2f s"), nan(r.RenewalP99, "%.2f s"), nan(r.SendLagP99*1000, "%.1f ms"),
			100*r.CPU[StandIn].Seconds()/secs, mib(r.RSS[StandIn]), r.LeasePUTs/secs, r.Failures)
	}
	writeIncrementalRSS(w, results)
	fmt.Fprintln(w, "\nCPU is per cent of one core over the steady window; fleet CPU per renewal divides the fleet's CPU time by the lease PUTs the stand-in answered in it (the fleet's status patches, watches and measurement included); RSS per node is the fleet's whole RSS over its nodes.")
}
