package capacity

import (
	"math"

	"fakelet.dev/fakelet/report"
)

// Report is r as report.json holds it: every step's levels against their limits, and the answer.
func (r Result) Report(c Config) *report.Capacity {
	out := &report.Capacity{Start: c.Start, Step: c.Step, Max: c.Max, Settle: c.Settle.String(), Hold: c.Hold.String(), Held: r.Held}
	for _, st := range r.Steps {
		out.Steps = append(out.Steps, report.CapacityStep{Nodes: st.Nodes, From: st.From, To: st.To,
			Levels: c.levels(st), Processes: st.Processes})
	}
	if r.Broke != nil {
		last := out.Steps[len(out.Steps)-1]
		for _, l := range last.Levels {
			if l.Level == r.Broke.Level {
				out.Broke = &l
				break
			}
		}
	}
	return out
}

// levels are st's levels in the order of Levels' fields, each with its limit and whether st broke
// it; the renewal interval's is left out where it does not apply (no renewal: status mode).
func (c Config) levels(st StepResult) []report.Level {
	broken := map[string]bool{}
	for _, b := range st.Broken {
		broken[b.Level] = true
	}
	m, l := st.Measured, c.Levels
	all := []report.Level{
		{Level: LevelFalseAlarms, Value: float64(m.FalseAlarms), Limit: float64(l.FalseAlarms)},
		{Level: LevelMutatingP99, Value: m.MutatingP99, Limit: l.MutatingP99.Seconds(), Unit: "s"},
		{Level: LevelAPFRejections, Value: m.APFRejections, Limit: float64(l.APFRejections)},
		{Level: LevelRenewalP99, Value: m.RenewalP99, Limit: c.RenewInterval.Seconds() * (1 + l.RenewalSlack), Unit: "s"},
		{Level: LevelFailedHeartbeats, Value: float64(m.FailedHeartbeats), Limit: float64(l.FailedHeartbeats)},
	}
	var out []report.Level
	for _, lv := range all {
		if math.IsNaN(lv.Value) || lv.Level == LevelRenewalP99 && lv.Value <= 0 {
			continue
		}
		lv.Broken = broken[lv.Level]
		out = append(out, lv)
	}
	return out
}
