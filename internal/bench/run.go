package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/pause"
)

// Options say which fleets to measure and how.
type Options struct {
	Sizes []int // fleet sizes
	// Footprints are measured at every size, one after the other in this order, each on a fresh
	// control plane (Result.Footprint).
	Footprints []agent.Footprint
	Steady     time.Duration // the measured window, after registration and Settle
	Settle     time.Duration // wait after every node is Ready, so registration's status patches pass
	// RegisterTimeout bounds the wait for all nodes to be Ready, and then the wait for the
	// controllers' writes to the Nodes to end (nodeWrites.awaitEnd).
	RegisterTimeout time.Duration
	Fakelet         string // the fakelet binary each fleet runs in
	Dir             string // control planes and logs go under it
	BinDir          string // control plane binaries
	RegisterQPS     float64
	RunArgs         []string // extra `fakelet run` flags, such as --lease-duration 400s
	RunEnv          []string // extra environment of the fleet process only, such as GOGC=200
	APIServerArgs   []string
	// Peer, if set, keeps each size's Nodes after the fleet's window, on the same control plane,
	// and is measured the same way (Result.Peer), after the fleet of PeerFootprint(Footprints).
	Peer *Peer
	// Target is what the fleets run against: a fresh local control plane ("" or TargetLocal), or
	// the stand-in (TargetStandIn), which measures the fleet alone.
	Target string
	// PodsPerNode, if above 0, measures each fleet again after its window, with that many pods on
	// every node placed by the scheduler from Deployments of the bench's own (Result.Pods), waiting
	// at most PodsTimeout for all of them to be Running.
	PodsPerNode int
	PodsTimeout time.Duration
	// ControllerManagerArgs and SchedulerArgs are extra flags of those components, such as their
	// --kube-api-qps, which bound how fast the pods are created and placed.
	ControllerManagerArgs, SchedulerArgs []string
	// BeforeWindow, if set, is called once a fleet has settled, just before its steady window, which
	// starts when it returns: benches run at once meet in it to measure the same stretch of time.
	BeforeWindow func(context.Context) error
	// FleetCPUs, if set, are the only CPUs each fleet (and a peer) runs on, and the target runs on
	// the others: a fleet measured apart from the server it loads, as on a machine of its own.
	FleetCPUs []int
	Log       io.Writer
}

// Result is one fleet size's measurements in one footprint. CPU times and counts cover the steady
// window.
type Result struct {
	Nodes         int
	Footprint     agent.Footprint
	AllReady      bool
	Register      time.Duration // from the fleet's start until every node was Ready
	Window        time.Duration
	CPU           map[string]time.Duration // by process: fakelet, kube-apiserver, etcd, kube-controller-manager, kube-scheduler
	RSS           map[string]int64
	Heartbeats    float64 // lease renewals and status patches the fleet sent
	Failures      float64 // heartbeats that failed
	LeasePUTs     float64 // as the apiserver counted them
	LeasePUTp99   float64 // seconds, from apiserver_request_duration_seconds
	RenewalP50    float64 // seconds between a node's renewals, from fakelet's histogram
	RenewalP99    float64
	SendLagP99    float64 // seconds from a heartbeat's due time to its send, from fakelet's histogram
	RegisteredErr string  // why not every node became Ready, if not
	// Watches is the watch streams the fleet's agents held at the window's end (fakelet_watches).
	Watches float64
	// APIServerWatches is the watches the apiserver served at the window's end
	// (apiserver_longrunning_requests{verb="WATCH"}): the agents', the fleet process's own (its
	// Nodes, its measurement), the controller manager's and the apiserver's.
	APIServerWatches float64
	// FleetHeap and FleetGoroutines are the fleet process's go_memstats_heap_inuse_bytes and
	// go_goroutines at the window's end.
	FleetHeap, FleetGoroutines float64
	Load                       string // the machine's 1, 5 and 15 minute load averages at the window's end
	Peer                       *PeerResult
	// Pods, with Options.PodsPerNode, is the same fleet after the window: its pods' rollout and a
	// window with them on every node.
	Pods *PodsResult
}

// Fakelet is the key of the fleet's own process in Result.CPU and Result.RSS.
const Fakelet = "fakelet"

// Run measures each size in each footprint in turn and returns what it could measure; it stops at
// the first fleet that fails to start.
func Run(ctx context.Context, o Options) ([]Result, error) {
	var out []Result
	at, err := placeFleet(o.FleetCPUs)
	if err != nil {
		return nil, err
	}
	peerAfter := PeerFootprint(o.Footprints)
	for _, n := range o.Sizes {
		for _, fp := range o.Footprints {
			fo := o
			if fp != peerAfter {
				fo.Peer = nil
			}
			r, err := measure(ctx, fo, at, n, fp)
			if err != nil {
				return out, fmt.Errorf("%d nodes, %s footprint: %w", n, fp, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// PeerFootprint is the footprint of the fleet a peer takes over from: the heartbeat footprint's if
// it is measured, since a peer such as kwok renews Leases and keeps the Nodes Ready and sends none
// of a kubelet's other requests.
func PeerFootprint(footprints []agent.Footprint) agent.Footprint {
	if len(footprints) == 0 || slices.Contains(footprints, agent.FootprintHeartbeat) {
		return agent.FootprintHeartbeat
	}
	return footprints[0]
}

// ParseFootprints reads a comma-separated list of footprints, each once.
func ParseFootprints(s string) ([]agent.Footprint, error) {
	var out []agent.Footprint
	for _, f := range strings.Split(s, ",") {
		fp, err := agent.ParseFootprint(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, fp) {
			return nil, fmt.Errorf("footprint %q given twice", fp)
		}
		out = append(out, fp)
	}
	return out, nil
}

func measure(ctx context.Context, o Options, at placement, n int, fp agent.Footprint) (Result, error) {
	res := Result{Nodes: n, Footprint: fp, CPU: map[string]time.Duration{}, RSS: map[string]int64{}}
	dir := filepath.Join(o.Dir, fmt.Sprintf("%d-%s", n, fp))
	var tgt *benchTarget
	err := onCPUs(at.target, func() (err error) {
		tgt, err = startTarget(ctx, o, dir, fmt.Sprintf("== %d nodes, %s footprint", n, fp))
		return err
	})
	if err != nil {
		return res, err
	}
	defer tgt.down()
	pids := tgt.pids
	addr, err := freeAddr()
	if err != nil {
		return res, err
	}
	logFile, err := os.Create(filepath.Join(dir, "fakelet.log"))
	if err != nil {
		return res, err
	}
	defer logFile.Close()
	args := append([]string{"run", "--kubeconfig", tgt.kubeconfig, "--nodes", strconv.Itoa(n),
		"--metrics-addr", addr, "--register-qps", strconv.FormatFloat(o.RegisterQPS, 'f', -1, 64),
		"--footprint", string(fp), "--keep", "--out", filepath.Join(dir, "report")}, o.RunArgs...)
	child := exec.CommandContext(ctx, o.Fakelet, args...)
	child.Env = append(append(os.Environ(), tgt.env...), o.RunEnv...)
	child.Stdout, child.Stderr = logFile, logFile
	child.Cancel = func() error { return child.Process.Signal(syscall.SIGTERM) }
	child.WaitDelay = 30 * time.Second
	began := time.Now()
	if err := onCPUs(at.fleet, child.Start); err != nil {
		return res, fmt.Errorf("start %s: %w", o.Fakelet, err)
	}
	defer func() {
		_ = child.Process.Signal(syscall.SIGTERM)
		_ = child.Wait()
	}()
	pids[Fakelet] = child.Process.Pid
	fleetURL := "http://" + addr + "/metrics"

	// Registration: poll the fleet's own count of Ready nodes.
	deadline := time.Now().Add(o.RegisterTimeout)
	for {
		if f, err := scrape(http.DefaultClient, fleetURL); err == nil && int(f.sum("fakelet_nodes", map[string]string{"state": "ready"})) >= n {
			res.AllReady, res.Register = true, time.Since(began)
			break
		}
		if time.Now().After(deadline) {
			res.RegisteredErr = fmt.Sprintf("not every node Ready within %v", o.RegisterTimeout)
			break
		}
		if err := pause.For(ctx, time.Second); err != nil {
			return res, err
		}
	}
	fmt.Fprintf(o.Log, "   %s; settling %v, then measuring %v\n", registered(res), o.Settle, o.Steady)
	if err := pause.For(ctx, o.Settle); err != nil {
		return res, err
	}
	apiserverNow := func() (families, error) { return scrape(tgt.metrics, tgt.metricsURL) }
	if err := realNodeWrites(apiserverNow).awaitEnd(ctx, o.RegisterTimeout, o.Log); err != nil {
		return res, err
	}

	if o.BeforeWindow != nil {
		if err := o.BeforeWindow(ctx); err != nil {
			return res, err
		}
	}
	snapshotNow := func() (snap, error) { return snapshot(pids, tgt.metrics, tgt.metricsURL, fleetURL) }
	if err := steadyWindow(ctx, &res, pids, snapshotNow, o.Steady); err != nil {
		return res, err
	}
	fmt.Fprintf(o.Log, "   fleet %.1fs CPU, %s %.1fs CPU, %.0f lease PUTs, %.0f watches held by the fleet, %.0f served by the apiserver\n",
		res.CPU[Fakelet].Seconds(), tgt.server, res.CPU[tgt.server].Seconds(), res.LeasePUTs, res.Watches, res.APIServerWatches)
	if o.PodsPerNode > 0 {
		pr, err := podsRun{
			o: o, nodes: n, res: res, pids: pids, snapshot: snapshotNow,
			admin: tgt.admin, components: tgt.components, metrics: tgt.metrics,
		}.run(ctx)
		res.Pods = pr
		return res, err
	}
	if o.Peer == nil {
		return res, nil
	}

	// The fleet runs with --keep: stopped, it leaves its Nodes and Leases for the peer to take over.
	fmt.Fprintf(o.Log, "   stopping the fleet, leaving its Nodes and Leases to %s\n", o.Peer.Name)
	_ = child.Process.Signal(syscall.SIGTERM)
	if err := child.Wait(); err != nil {
		return res, fmt.Errorf("stop the fleet: %w; see %s", err, logFile.Name())
	}
	delete(pids, Fakelet)
	cs, err := kubernetes.NewForConfig(tgt.admin)
	if err != nil {
		return res, err
	}
	pr, err := peerRun{
		peer:       *o.Peer,
		kubeconfig: tgt.kubeconfig,
		dir:        dir,
		pids:       pids,
		cpus:       at.fleet,
		snapshot: func(pids map[string]int) (snap, error) {
			return snapshot(pids, tgt.metrics, tgt.metricsURL, "")
		},
		handedOver:     func(ctx context.Context) (bool, error) { return handedOver(ctx, cs, n) },
		poll:           2 * time.Second,
		handOverWithin: o.RegisterTimeout,
		settle:         o.Settle,
		steady:         o.Steady,
		log:            o.Log,
	}.run(ctx)
	if err != nil {
		// The fleet's window stands; the table says why the peer's is missing.
		pr.Err = err.Error()
		fmt.Fprintf(o.Log, "   %s: %v\n", o.Peer.Name, err)
	}
	res.Peer = &pr
	return res, ctx.Err()
}

// steadyWindow measures a window of d into res: the processes' CPU over it and RSS at its end, the
// fleet's heartbeats, renewal intervals, heap, goroutines and watches, the apiserver's lease PUTs and
// watches, and the machine's load average at its end.
func steadyWindow(ctx context.Context, res *Result, pids map[string]int, snapshot func() (snap, error), d time.Duration) error {
	before, err := snapshot()
	if err != nil {
		return err
	}
	if err := pause.For(ctx, d); err != nil {
		return err
	}
	after, err := snapshot()
	if err != nil {
		return err
	}
	res.Window = after.at.Sub(before.at)
	res.CPU, res.RSS = map[string]time.Duration{}, map[string]int64{}
	for name := range pids {
		res.CPU[name] = after.cpu[name] - before.cpu[name]
		res.RSS[name] = after.rss[name]
	}
	res.Heartbeats = after.fleet.sum("fakelet_heartbeats_total", nil) - before.fleet.sum("fakelet_heartbeats_total", nil)
	failed := map[string]string{"result": "failure"}
	res.Failures = after.fleet.sum("fakelet_heartbeats_total", failed) - before.fleet.sum("fakelet_heartbeats_total", failed)
	res.LeasePUTs, res.LeasePUTp99 = leasePUTs(before.apiserver, after.apiserver)
	renewals := after.fleet.histogram("fakelet_lease_renewal_interval_seconds", nil).
		minus(before.fleet.histogram("fakelet_lease_renewal_interval_seconds", nil))
	res.RenewalP50, res.RenewalP99 = renewals.quantile(0.5), renewals.quantile(0.99)
	res.SendLagP99 = after.fleet.histogram("fakelet_heartbeat_send_lag_seconds", nil).
		minus(before.fleet.histogram("fakelet_heartbeat_send_lag_seconds", nil)).quantile(0.99)
	res.Watches = after.fleet.sum("fakelet_watches", nil)
	res.APIServerWatches = apiserverWatches(after.apiserver)
	res.FleetHeap = after.fleet.sum("go_memstats_heap_inuse_bytes", nil)
	res.FleetGoroutines = after.fleet.sum("go_goroutines", nil)
	res.Load = loadAverage()
	return nil
}

// leasePUTs returns the lease PUTs the apiserver counted between two scrapes, and their p99 latency
// in seconds.
func leasePUTs(before, after families) (count, p99 float64) {
	puts := map[string]string{"verb": "PUT", "resource": "leases"}
	count = after.sum("apiserver_request_total", puts) - before.sum("apiserver_request_total", puts)
	p99 = after.histogram("apiserver_request_duration_seconds", puts).
		minus(before.histogram("apiserver_request_duration_seconds", puts)).quantile(0.99)
	return count, p99
}

// apiserverWatches is the watches the apiserver serves now. v1.37 has no
// apiserver_registered_watchers; every watch is a long-running request of verb WATCH.
func apiserverWatches(f families) float64 {
	return f.sum("apiserver_longrunning_requests", map[string]string{"verb": "WATCH"})
}

type snap struct {
	at               time.Time
	cpu              map[string]time.Duration
	rss              map[string]int64
	apiserver, fleet families
}

func snapshot(pids map[string]int, mc *http.Client, apiserverURL, fleetURL string) (snap, error) {
	s := snap{at: time.Now(), cpu: map[string]time.Duration{}, rss: map[string]int64{}}
	for name, pid := range pids {
		c, err := cpuTime(pid)
		if err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		s.cpu[name] = c
		s.rss[name], _ = rss(pid)
	}
	var errA, errF error
	s.apiserver, errA = scrape(mc, apiserverURL)
	if fleetURL != "" { // none once the fleet has handed its Nodes to a peer
		s.fleet, errF = scrape(http.DefaultClient, fleetURL)
	}
	return s, errors.Join(errA, errF)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// nan prints a missing measurement as such: NaN, or the infinity of a ratio to nothing (CPU per
// heartbeat in a window without heartbeats).
func nan(v float64, format string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// registered says how the fleet's registration ended, for the log: a fleet that was not all Ready
// by the deadline is measured anyway, and must not read as registered at once.
func registered(res Result) string {
	if !res.AllReady {
		return res.RegisteredErr
	}
	return fmt.Sprintf("registered in %v", res.Register.Round(time.Second))
}
