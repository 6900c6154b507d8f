package run

import (
	"math"
	"os"
	"runtime"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
)

// heartbeatsPerProc is how many heartbeats a second one P (a thread running Go code) serves with
// room for registration and the measurement's watches: at 1000 nodes, 100 heartbeats a second, the
// fleet uses about an eighth of a core (docs/performance.md).
const heartbeatsPerProc = 500

// FleetProcs is the GOMAXPROCS a fleet needs. A fleet waits on the network almost all the time: with
// a P per CPU, each response wakes an idle thread to run its goroutine and parks it again, and on 2
// cores that thread handoff cost a third of the fleet's CPU (futex and the scheduler's search for
// work). Fewer Ps leave the other cores to the control plane under test on the same machine.
// available is the runtime's default, the CPUs the process may use (its cgroup limit included).
func FleetProcs(cfg fleet.Config, available int) int {
	every := cfg.Heartbeat.RenewInterval
	if cfg.Heartbeat.Mode == heartbeat.ModeStatus {
		every = cfg.Heartbeat.StatusUpdateFrequency
	}
	perSecond := float64(cfg.Nodes) / every.Seconds()
	return max(1, min(available, int(math.Ceil(perSecond/heartbeatsPerProc))))
}

// SizeProcs sets GOMAXPROCS for the fleet: flag if positive, else the GOMAXPROCS environment
// variable if set (the runtime has applied it), else FleetProcs. It returns the setting.
func SizeProcs(flag int, cfg fleet.Config) int {
	switch {
	case flag > 0:
		runtime.GOMAXPROCS(flag)
		return flag
	case os.Getenv("GOMAXPROCS") != "":
		return runtime.GOMAXPROCS(0)
	}
	n := FleetProcs(cfg, runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(n)
	return n
}
