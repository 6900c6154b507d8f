package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
)

// The limits of `fakelet run`'s inputs beyond "positive", each with the reason it exists. They are
// checked by prepare, before the run starts a control plane, listens or calls an API.
const (
	// nodeMemory is the memory a run budgets for each of its nodes: the fleet's RSS per node in
	// docs/performance.md's bench tables, rounded up with room for registration, whose peak per node
	// is higher than the steady state, and for the measurement's per-node state.
	nodeMemory = 64 << 10
	// connectionMemory is what a node's own connection adds with --connections per-node: its TLS
	// and HTTP/2 buffers, reader goroutine and certificate, as docs/performance.md measured it,
	// rounded up with room for a connection dialed again while the old one closes.
	connectionMemory = 192 << 10
	// maxLeaseDuration is the longest lease a Lease can hold: spec.leaseDurationSeconds is an int32.
	maxLeaseDuration = math.MaxInt32 * time.Second
	// minRenewInterval is a kubelet's shortest renew interval: a quarter (the kubelet's fixed
	// fraction) of the shortest lease, one second. Shorter is not a kubelet's load.
	minRenewInterval = time.Second / 4
	// minStatusUpdateFrequency: a NodeStatus's heartbeat times have whole seconds, so a status
	// recomputed more often than every second sends nothing the control plane can tell apart.
	minStatusUpdateFrequency = time.Second
	// minScrapeInterval: each scrape reads every component's /metrics (the apiserver's is megabytes);
	// scraping more often than every second would measure the scrapes.
	minScrapeInterval = time.Second
)

// checkLimits checks what the positivity checks of config and fleet.Config.Resolve leave open, on
// the fleet this process runs (cfg, after --shard took its slice): that its nodes fit in this
// machine's memory, and that it has no more connections than kubelets.
func (rf *runFlags) checkLimits(cfg fleet.Config) error {
	perNode := uint64(nodeMemory)
	if cfg.ConnectionMode == fleet.ConnectionsPerNode {
		perNode += connectionMemory
	}
	if mem := machineMemory(); mem > 0 && uint64(cfg.Nodes) > mem/perNode {
		return fmt.Errorf("%s: needs about %s at %d KiB per node (docs/performance.md), and this machine has %s; run fewer, or shards of the fleet on several machines (--shard, docs/distributed.md)",
			rf.nodesSource(cfg), gib(uint64(cfg.Nodes)*perNode), perNode>>10, gib(mem))
	}
	if cfg.Connections > cfg.Nodes {
		return fmt.Errorf("--connections %d: more than the fleet's %d nodes, and a kubelet uses one connection", cfg.Connections, cfg.Nodes)
	}
	return nil
}

// nodesSource names where the node count came from, for errors: --nodes, or the profile's spec.nodes,
// and this shard's slice of it.
func (rf *runFlags) nodesSource(cfg fleet.Config) string {
	s := fmt.Sprintf("--nodes %d", rf.fleet.Nodes)
	if rf.nodesFromProfile {
		s = fmt.Sprintf("spec.nodes %d of profile %s", rf.fleet.Nodes, rf.profiles.profile)
	}
	if cfg.Nodes != rf.fleet.Nodes {
		s += fmt.Sprintf(" (this shard's %d)", cfg.Nodes)
	}
	return s
}

func gib(bytes uint64) string {
	if bytes >= 1<<40 {
		return fmt.Sprintf("%.1f TiB", float64(bytes)/(1<<40))
	}
	return fmt.Sprintf("%.1f GiB", float64(bytes)/(1<<30))
}

// machineMemory is the memory this process may use; a test sets its own.
var machineMemory = readMachineMemory

// readMachineMemory is the machine's memory, or its cgroup's limit if lower; 0 when neither can be
// read (then only fleetname.MaxNodes bounds a fleet).
func readMachineMemory() uint64 {
	mem := memTotal()
	if data, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil && (mem == 0 || limit < mem) {
			mem = limit
		}
	}
	return mem
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 if unknown.
func memTotal() uint64 {
	total, err := controlplane.ReadKiB("/proc/meminfo", "MemTotal")
	if err != nil {
		return 0
	}
	return uint64(total)
}
