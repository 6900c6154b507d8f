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
