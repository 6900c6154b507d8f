package report

import (
	"slices"
	"testing"
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
		var labels []string
		for _, tk := range (secondsTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Value < tc.lo || tk.Value > tc.hi {
				t.Errorf("[%v, %v]: tick at %v is outside the axis", tc.lo, tc.hi, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tc.want) {
			t.Errorf("[%v, %v]: labels %q, want %q", tc.lo, tc.hi, labels, tc.want)
		}
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
		var labels []string
		for _, tk := range (logTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Value < tc.lo || tk.Value > tc.hi {
				t.Errorf("[%v, %v]: tick at %v is outside the axis", tc.lo, tc.hi, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tc.want) {
			t.Errorf("[%v, %v]: labels %q, want %q", tc.lo, tc.hi, labels, tc.want)
		}
	}
	for v, want := range map[float64]float64{4: 2, 12: 10, 0.03: 0.02, 7.5: 5, 1: 1} {
		if got := logFloor(v); got != want {
			t.Errorf("logFloor(%v) = %v, want %v", v, got, want)
		}
	}
}
