package bench

import (
	"math"
	"testing"
)

func TestQuantileInterpolatesWithinTheBucket(t *testing.T) {
	// 10 observations at or under 1, 90 more under 2, none above.
	b := buckets{1: 10, 2: 100, math.Inf(1): 100}
	for _, tc := range []struct{ q, want float64 }{
		{0.05, 0.5},  // rank 5 of the 10 in (0, 1]
		{0.5, 1.444}, // rank 50: 40 of the 90 in (1, 2]
		{0.99, 1.989},
	} {
		if got := b.quantile(tc.q); math.Abs(got-tc.want) > 0.001 {
			t.Errorf("q%.2f = %.4f, want %.3f", tc.q, got, tc.want)
		}
	}
	if got := (buckets{1: 0, math.Inf(1): 0}).quantile(0.99); !math.IsNaN(got) {
		t.Errorf("quantile of an empty histogram = %v, want NaN", got)
	}
}

func TestHistogramDeltaIsTheWindow(t *testing.T) {
	before := buckets{1: 5, 2: 10, math.Inf(1): 10}
	after := buckets{1: 5, 2: 30, math.Inf(1): 40}
	d := after.minus(before)
	if d[1] != 0 || d[2] != 20 || d[math.Inf(1)] != 30 {
		t.Fatalf("delta %v", d)
	}
	if got := d.quantile(0.5); got != 1.75 { // rank 15 of the 20 in (1, 2]
		t.Errorf("median of the window %v, want 1.75", got)
	}
}
