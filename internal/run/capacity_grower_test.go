package run

import (
	"math"
	"testing"

	"fakelet.dev/fakelet/fleet"
)

// TestP99BetweenIsOfTheHoldOnly: a step's renewal p99 is of the intervals observed since its hold
// began, not of the whole run's.
func TestP99BetweenIsOfTheHoldOnly(t *testing.T) {
	bounds := []float64{10, 11, 20, 40}
	before := fleet.Histogram{Bounds: bounds, Cumulative: []uint64{0, 0, 100, 100}, Count: 100} // 100 slow ones earlier
	after := fleet.Histogram{Bounds: bounds, Cumulative: []uint64{100, 200, 300, 300}, Count: 300}
	if got := p99Between(before, after); got < 10 || got > 11 {
		t.Errorf("p99 %v, want within (10, 11]: the earlier slow intervals left out", got)
	}
	if got := p99Between(after, after); got != 0 || math.IsNaN(got) {
		t.Errorf("p99 of nothing %v, want 0", got)
	}
}
