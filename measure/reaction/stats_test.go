package reaction

import (
	"math"
	"testing"
)

// Hand-computed nearest-rank percentiles: rank = ceil(p/100 x n), 1-based.
func TestPercentile(t *testing.T) {
	tens := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"one sample is every percentile", []float64{7}, 50, 7},
		{"one sample p99", []float64{7}, 99, 7},
		{"ten p50: rank 5", tens, 50, 5},
		{"ten p90: rank 9", tens, 90, 9},
		{"ten p99: rank ceil(9.9)=10", tens, 99, 10},
		{"ten p0 is the minimum", tens, 0, 1},
		{"hundred p99: rank 99", hundred, 99, 99},
		{"hundred p50: rank 50", hundred, 50, 50},
		{"three p50: rank ceil(1.5)=2", []float64{1, 20, 300}, 50, 20},
		{"three p90: rank ceil(2.7)=3", []float64{1, 20, 300}, 90, 300},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(p%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
	if got := Percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("Percentile of nothing = %v, want NaN", got)
	}
}

func TestSummarize(t *testing.T) {
	got := Summarize([]float64{22.5, 21.0, 24.0, 20.5}) // unsorted on purpose
	want := Stats{Count: 4, Min: 20.5, P50: 21.0, P90: 24.0, P99: 24.0, Max: 24.0}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if got := Summarize(nil); got != (Stats{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", got)
	}
}
