package bench

import (
	"fmt"
	"io"
	"math"
	"time"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
)

// WritePeerTable writes, for the results that have a peer's window, fakelet and the peer side by
// side: CPU per lease PUT (the process's CPU time over its window divided by the lease PUTs the
// apiserver counted in it), the process's CPU as a share of the apiserver's, and RSS.
func WritePeerTable(w io.Writer, results []Result) {
	var peer string
	var fp agent.Footprint
	for _, r := range results {
		if r.Peer != nil {
			peer, fp = r.Peer.Name, r.Footprint
			break
		}
	}
	if peer == "" {
		return
	}
	fmt.Fprintf(w, "| nodes | fakelet CPU per lease PUT | %[1]s CPU per lease PUT | %[1]s / fakelet | fakelet / apiserver CPU | %[1]s / apiserver CPU | fakelet RSS | %[1]s RSS | lease PUT/s, fakelet / %[1]s | %[1]s took over in |\n", peer)
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		p := r.Peer
		if p == nil {
			continue
		}
		ours := perPUT(r.CPU[Fakelet], r.LeasePUTs)
		theirs, ratio, theirShare, theirRSS, theirRate, took := "failed: "+p.Err, "n/a", "n/a", "n/a", "n/a", "n/a"
		if p.Err == "" {
			t := perPUT(p.CPU[p.Name], p.LeasePUTs)
			theirs, ratio = nan(t, "%.0f µs"), nan(t/ours, "%.2f")
			theirShare = share(p.CPU[p.Name], p.CPU[controlplane.APIServer])
			theirRSS = fmt.Sprintf("%.0f MiB", mib(p.RSS[p.Name]))
			theirRate = fmt.Sprintf("%.1f", p.LeasePUTs/p.Window.Seconds())
			took = fmt.Sprintf("%.0f s", p.HandOver.Seconds())
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %.0f MiB | %s | %.1f / %s | %s |\n", r.Nodes,
			nan(ours, "%.0f µs"), theirs, ratio, share(r.CPU[Fakelet], r.CPU[controlplane.APIServer]), theirShare,
			mib(r.RSS[Fakelet]), theirRSS, r.LeasePUTs/r.Window.Seconds(), theirRate, took)
	}
	fmt.Fprintf(w, "\nEach size: fakelet's window in the %s footprint, then %s keeping the same Nodes and Leases on the same control plane for a window as long. CPU per lease PUT divides the process's CPU time over its window (from /proc) by the lease PUTs the apiserver counted in it; a share of the apiserver's CPU compares their CPU times over the same window.\n", fp, peer)
}

// perPUT is CPU microseconds per lease PUT, NaN without PUTs.
func perPUT(cpu time.Duration, puts float64) float64 {
	if puts <= 0 {
		return math.NaN()
	}
	return float64(cpu.Microseconds()) / puts
}

func share(cpu, apiserver time.Duration) string {
	if apiserver <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*cpu.Seconds()/apiserver.Seconds())
}
