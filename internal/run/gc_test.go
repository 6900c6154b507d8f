package run

import (
	"runtime/debug"
	"testing"
)

func TestFleetGCPercentLowersOnlyLargeFleets(t *testing.T) {
	for _, tc := range []struct {
		nodes, want int
	}{{1, 100}, {1000, 100}, {4999, 100}, {5000, 50}, {100000, 50}} {
		if got := fleetGCPercent(tc.nodes); got != tc.want {
			t.Errorf("fleetGCPercent(%d) = %d, want %d", tc.nodes, got, tc.want)
		}
	}
}

func TestSizeGCLeavesTheEnvironmentsSetting(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	debug.SetGCPercent(200) // as the runtime applies GOGC=200 at start
	t.Setenv("GOGC", "200")
	if got := SizeGC(10000); got != 200 {
		t.Errorf("with GOGC=200: SizeGC = %d, want 200", got)
	}
	if got := debug.SetGCPercent(200); got != 200 {
		t.Errorf("with GOGC=200: GC percent became %d", got)
	}

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := SizeGC(10000); got != 200 {
		t.Errorf("with GOMEMLIMIT: SizeGC = %d, want the runtime's 200", got)
	}

	t.Setenv("GOMEMLIMIT", "")
	if got := SizeGC(10000); got != largeFleetGCPercent {
		t.Errorf("without either: SizeGC(10000) = %d, want %d", got, largeFleetGCPercent)
	}
	if got := debug.SetGCPercent(100); got != largeFleetGCPercent {
		t.Errorf("without either: GC percent became %d, want %d", got, largeFleetGCPercent)
	}
}
