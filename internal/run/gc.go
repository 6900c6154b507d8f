package run

import (
	"os"
	"runtime/debug"
)

// Above largeFleetNodes the fleet's heap is most of its RSS, and the garbage collector's default
// headroom (GOGC=100: the heap grows to twice what is live before the next cycle) keeps about as
// much again resident; GOGC=50 keeps half as much, for cycles twice as often (their memory and CPU
// are in docs/performance.md, Where the memory goes). Below it, the binary's pages and the
// runtime's own are most of the RSS, and the default stays.
const (
	largeFleetNodes     = 5000
	largeFleetGCPercent = 50
)

// fleetGCPercent is the GOGC a fleet of nodes runs with.
func fleetGCPercent(nodes int) int {
	if nodes >= largeFleetNodes {
		return largeFleetGCPercent
	}
	return 100
}

// SizeGC sets GOGC for a fleet of nodes, unless the GOGC or GOMEMLIMIT environment variable says
// how to collect (the runtime has applied it). It returns the setting (-1: off).
func SizeGC(nodes int) int {
	return SetGC(fleetGCPercent(nodes))
}

// SetGC sets GOGC to percent, unless the GOGC or GOMEMLIMIT environment variable says how to
// collect (the runtime has applied it). It returns the setting (-1: off).
func SetGC(percent int) int {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		current := debug.SetGCPercent(100)
		debug.SetGCPercent(current)
		return current
	}
	debug.SetGCPercent(percent)
	return percent
}
