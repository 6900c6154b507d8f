package capacity

import "fakelet.dev/fakelet/report"

// Report is r as report.json holds it: every step's levels against their limits, and the answer.
func (r Result) Report(c Config) *report.Capacity {
	out := &report.Capacity{Start: c.Start, Step: c.Step, Max: c.Max, Settle: c.Settle.String(), Hold: c.Hold.String(), Held: r.Held}
	for _, st := range r.Steps {
		out.Steps = append(out.Steps, report.CapacityStep{Nodes: st.Nodes, From: st.From, To: st.To,
			Levels: c.Levels.Measure(st.Measured, c.RenewInterval), Processes: st.Processes})
	}
	if r.Broke != nil {
		broke := *r.Broke
		out.Broke = &broke
	}
	return out
}
