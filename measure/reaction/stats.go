package reaction

import (
	"math"
	"slices"
)

// Stats summarises a set of latencies, in seconds.
type Stats struct {
	Count int     `json:"count"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Summarize computes the Stats of samples (in any order; not modified).
func Summarize(samples []float64) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Stats{
		Count: len(s), Min: s[0], Max: s[len(s)-1],
		P50: Percentile(s, 50), P90: Percentile(s, 90), P99: Percentile(s, 99),
	}
}

// Percentile is the nearest-rank p-th percentile of sorted samples: the smallest sample that at least
// p percent of the samples are less than or equal to. It is always one of the samples, so a p99 of
// few samples is their maximum rather than an interpolation no node had.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
