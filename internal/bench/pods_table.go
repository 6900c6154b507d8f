package bench

import (
	"fmt"
	"io"
	"time"

	"fakelet.dev/fakelet/controlplane"
)

// TargetHeapPerPod is issue 25's bound on the fleet's heap per running pod.
const TargetHeapPerPod = 2 << 10

// WritePodsTable writes, for each fleet measured with pods, how they rolled out, then its steady
// window without pods beside the one with them and what the pods cost per pod.
func WritePodsTable(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| nodes | footprint | pods | Deployments | all Running after | last created / bound / Running | pods per node | fleet CPU | apiserver CPU | etcd CPU | kcm CPU | scheduler CPU | kcm requests/s, throttled | scheduler requests/s, throttled |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		p := r.Pods
		if p == nil {
			continue
		}
		secs := p.Rollout.Seconds()
		core := func(name string) string { return nan(100*ratio(p.RolloutCPU[name].Seconds(), secs), "%.1f%%") }
		client := func(name string) string {
			c, ok := p.Clients[name]
			if !ok {
				return "n/a"
			}
			return fmt.Sprintf("%s, %.0f s", nan(ratio(c.Requests, secs), "%.1f"), c.Throttled)
		}
		running := fmt.Sprintf("%.0f s", p.LastRunning.Seconds())
		if !p.AllRunning {
			running = p.Err
		}
		fmt.Fprintf(w, "| %d | %s | %d | %d | %s | %.0f / %.0f / %.0f s | %d-%d | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Nodes, r.Footprint, p.Pods, p.Deployments, running,
			p.LastCreated.Seconds(), p.LastBound.Seconds(), p.LastRunning.Seconds(), p.MinPerNode, p.MaxPerNode,
			core(Fakelet), core(controlplane.APIServer), core(controlplane.Etcd), core(controlplane.ControllerManager), core(controlplane.Scheduler),
			client(controlplane.ControllerManager), client(controlplane.Scheduler))
	}
	fmt.Fprintln(w, "\nThe rollout: from the first Deployment's creation until every pod was seen Running, CPU in per cent of one core over it; \"throttled\" is the seconds the component's requests waited in its client-side rate limiter (--kube-api-qps), summed over requests.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| nodes | footprint | pods | load average | fleet CPU | apiserver CPU | fleet RSS | fleet heap | fleet goroutines | apiserver RSS | lease PUT p99 | renewal interval p50 / p99 | failed heartbeats |")
	fmt.Fprintln(w, "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if r.Pods == nil {
			continue
		}
		writeWindowRow(w, r, 0)
		writeWindowRow(w, r.Pods.With, r.Pods.Running)
	}
	fmt.Fprintln(w)
	for _, r := range results {
		if p := r.Pods; p != nil {
			fmt.Fprintf(w, "- %d nodes, %s footprint: %s\n", r.Nodes, r.Footprint, perPod(r, p))
		}
	}
	fmt.Fprintln(w, "\nEach fleet's steady window without pods, then, after the rollout and the settle, the window with them, on the same fleet and control plane. Per pod: the difference between the two windows over the pods Running.")
}

func writeWindowRow(w io.Writer, r Result, pods int) {
	secs := r.Window.Seconds()
	core := func(name string) string { return nan(100*ratio(r.CPU[name].Seconds(), secs), "%.1f%%") }
	fmt.Fprintf(w, "| %d | %s | %d | %s | %s | %s | %.0f MiB | %.0f MiB | %.0f | %.0f MiB | %s | %s / %s | %.0f |\n",
		r.Nodes, r.Footprint, pods, r.Load, core(Fakelet), core(controlplane.APIServer),
		mib(r.RSS[Fakelet]), r.FleetHeap/(1<<20), r.FleetGoroutines, mib(r.RSS[controlplane.APIServer]),
		nan(r.LeasePUTp99*1000, "%.1f ms"), nan(r.RenewalP50, "%.2f s"), nan(r.RenewalP99, "%.2f s"), r.Failures)
}

// perPod says what the pods cost per pod: the fleet's heap and RSS, its CPU while they rolled out
// and in the steady window, the apiserver's RSS, and the renewal interval's p99 without and with them.
func perPod(r Result, p *PodsResult) string {
	if p.Running == 0 {
		return "no pod Running: nothing to divide"
	}
	pods := float64(p.Running)
	w := p.With
	heap := (w.FleetHeap - r.FleetHeap) / pods
	rolloutCPU := float64(p.RolloutCPU[Fakelet].Microseconds()) / pods
	steadyCPU := 1000 * (ratio(w.CPU[Fakelet].Seconds(), w.Window.Seconds()) - ratio(r.CPU[Fakelet].Seconds(), r.Window.Seconds())) / pods
	return fmt.Sprintf("fleet heap %.0f B per pod (at most %d KiB: %s), fleet RSS %.0f B per pod; fleet CPU %.0f µs per pod in the rollout, %s millicores per pod in the steady window; apiserver RSS %.1f KiB per pod, its CPU %s of a core in the rollout; renewal interval p99 %s without the pods, %s with them",
		heap, TargetHeapPerPod>>10, met(heap <= TargetHeapPerPod), float64(w.RSS[Fakelet]-r.RSS[Fakelet])/pods,
		rolloutCPU, nan(steadyCPU, "%.4f"), float64(w.RSS[controlplane.APIServer]-r.RSS[controlplane.APIServer])/pods/1024,
		nan(100*ratio(p.RolloutCPU[controlplane.APIServer].Seconds(), p.Rollout.Seconds()), "%.0f%%"),
		nan(r.RenewalP99, "%.2f s"), nan(w.RenewalP99, "%.2f s"))
}

// DefaultPodsTimeout is how long a bench waits by default for its pods to be Running: the
// controller manager creates them at its client's --kube-api-qps.
const DefaultPodsTimeout = time.Hour
