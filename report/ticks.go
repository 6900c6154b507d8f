package report

import (
	"strconv"

	"gonum.org/v1/plot"
)

// secondsTicks marks a time axis in seconds at a round step (10 s, 30 s, 1 m, 5 m, ...) chosen for
// about six labels, each a whole number: gonum's default picks as few as two, labelled "250.00".
type secondsTicks struct{}

// tickSteps are the steps secondsTicks chooses from, in seconds.
var tickSteps = []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200}

// Ticks implements plot.Ticker.
func (secondsTicks) Ticks(lo, hi float64) []plot.Tick {
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if (hi-lo)/s <= 8 {
			step = s
			break
		}
	}
	var ticks []plot.Tick
	for i := int(lo / step); float64(i)*step <= hi; i++ {
		v := float64(i) * step
		if v < lo {
			continue
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		// one unlabelled minor tick between labels
		if mid := v + step/2; mid <= hi {
			ticks = append(ticks, plot.Tick{Value: mid})
		}
	}
	return ticks
}
