package report

import (
	"fmt"
	"math"
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

// logTicks marks an axis of log10(value) at values 1, 2 and 5 times each power of ten, each
// labelled as a plain number ("0.5", "20", "10000") while the axis spans three decades or less, else
// only the powers of ten: gonum's LogTicks labels powers of ten alone, so an axis within one decade
// had no label at all.
type logTicks struct{}

// Ticks implements plot.Ticker: lo and hi are the log10 of the axis's ends.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return nil
	}
	few := hi-lo <= 3
	var ticks []plot.Tick
	for e := int(math.Floor(lo)); e <= int(math.Ceil(hi)); e++ {
		for _, m := range []int{1, 2, 5} {
			v := decimal(m, e)
			if l := math.Log10(v); l < lo || l > hi {
				continue
			}
			t := plot.Tick{Value: math.Log10(v)}
			if m == 1 || few {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// logFloor is the highest of 1, 2 or 5 times a power of ten at or below v > 0: where a log axis
// begins, on a labelled tick.
func logFloor(v float64) float64 {
	e := int(math.Floor(math.Log10(v)))
	for _, m := range []int{5, 2, 1} {
		if f := decimal(m, e); f <= v {
			return f
		}
	}
	return decimal(5, e-1) // v just under a power of ten that Log10 rounded up to it
}

// decimal is m×10^e, parsed from its decimal form so that 2e-3 is 0.002, not 0.0020000000000000005.
func decimal(m, e int) float64 {
	v, _ := strconv.ParseFloat(fmt.Sprintf("%de%d", m, e), 64)
	return v
}
