package report

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/plot"
)

func TestSecondsTicksLabelRoundSeconds(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 280, []string{"0", "60", "120", "180", "240"}},
		{0, 115, []string{"0", "15", "30", "45", "60", "75", "90", "105"}},
		{3, 40, []string{"5", "10", "15", "20", "25", "30", "35", "40"}},
		{0, 3600, []string{"0", "600", "1200", "1800", "2400", "3000", "3600"}},
	} {
		wantLabels(t, secondsTicks{}, tc.lo, tc.hi, tc.want)
	}
}

func TestLogTicksLabelOneTwoFive(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{2, 24000, []string{"10", "100", "1000", "10000"}},
		{5, 48, []string{"5", "10", "20"}},
		{0.002, 0.09, []string{"0.002", "0.005", "0.01", "0.02", "0.05"}},
		{12, 18, nil},
	} {
		wantLabels(t, logTicks{}, math.Log10(tc.lo), math.Log10(tc.hi), tc.want)
	}
	for v, want := range map[float64]float64{4: 2, 12: 10, 0.03: 0.02, 7.5: 5, 1: 1} {
		if got := logFloor(v); got != want {
			t.Errorf("logFloor(%v) = %v, want %v", v, got, want)
		}
	}
}

// wantLabels checks that tk marks [lo, hi] within it, labelled want.
func wantLabels(t *testing.T, tk plot.Ticker, lo, hi float64, want []string) {
	t.Helper()
	var labels []string
	for _, tick := range tk.Ticks(lo, hi) {
		if tick.Value < lo || tick.Value > hi {
			t.Errorf("[%v, %v]: tick at %v is outside the axis", lo, hi, tick.Value)
		}
		if tick.Label != "" {
			labels = append(labels, tick.Label)
		}
	}
	if !slices.Equal(labels, want) {
		t.Errorf("[%v, %v]: labels %q, want %q", lo, hi, labels, want)
	}
}
