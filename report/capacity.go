package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"fakelet.dev/fakelet/measure/load"
)

// Capacity is the answer of a capacity run (fakelet capacity): the steps the fleet grew through,
// each held and checked against the service levels, and the largest that held them all. The run's
// phases are the steps' settles and holds, so the rest of the report is per step too.
type Capacity struct {
	Start  int    `json:"start"`
	Step   int    `json:"step"`
	Max    int    `json:"max"`
	Settle string `json:"settle"`
	Hold   string `json:"hold"`
	// Held is the largest fleet that held every level; 0 if the first step broke one.
	Held int `json:"held"`
	// Broke is the level the first broken step broke (the first of its Levels if it broke several);
	// nil if every step held, and the answer is then "at least Max".
	Broke *Level         `json:"broke,omitempty"`
	Steps []CapacityStep `json:"steps"`
	// Shards is set in a sharded run's reports (fakelet capacity --shard): each shard's, whose steps
	// hold its own levels and whose answer is the fleet's, and the merge of them all
	// (fakelet report merge), whose steps hold the fleet's.
	Shards *CapacityShards `json:"shards,omitempty"`
}

// CapacityShards say which run of how many shards a capacity report is of.
type CapacityShards struct {
	// Shard is this report's shard ("i/n"), "" in a merged report.
	Shard string `json:"shard,omitempty"`
	Count int    `json:"count"`
	// Run is the hash of the parameters every shard shared, Start the start they agreed on: the
	// reports of one run have both the same.
	Run   string    `json:"run"`
	Start time.Time `json:"start"`
}

// CapacityStep is one step: its size, its hold, its levels and the control plane's CPU and memory
// over the hold.
type CapacityStep struct {
	Nodes     int            `json:"nodes"`
	From      time.Time      `json:"from"`
	To        time.Time      `json:"to"`
	Levels    []Level        `json:"levels"`
	Processes []load.Process `json:"processes,omitempty"`
}

// Level is one service level in one step: the measured value against its limit, in Unit ("" for a
// count, "s" for seconds). A level that did not apply (the renewal interval in status mode) is left
// out of the step.
type Level struct {
	Level  string  `json:"level"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Unit   string  `json:"unit,omitempty"`
	Broken bool    `json:"broken,omitempty"`
	// Sum says the level counts what happened to a shard's own nodes (false alarms, failed
	// heartbeats): the fleet's is the sum of its shards'. Any other level is the worst shard's.
	Sum bool `json:"sum,omitempty"`
}

// By is how far the value passed the limit, as a fraction of the limit (for a limit of 0, the value
// itself).
func (l Level) By() float64 {
	if l.Limit == 0 {
		return l.Value
	}
	return l.Value/l.Limit - 1
}

// String says the level's value against its limit.
func (l Level) String() string {
	by := fmt.Sprintf("%.0f%% over", 100*l.By())
	if l.Limit == 0 {
		by = "over 0"
	}
	return fmt.Sprintf("%s %s against at most %s (%s)", l.Level, l.format(l.Value), l.format(l.Limit), by)
}

func (l Level) format(v float64) string {
	if l.Unit == "s" {
		return fmt.Sprintf("%.3g s", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// Answer is the capacity run's answer in one line.
func (c *Capacity) Answer() string {
	if c.Broke == nil {
		return fmt.Sprintf("every step held every level, up to --max: the control plane holds at least %d nodes", c.Held)
	}
	broken := c.Steps[len(c.Steps)-1].Nodes
	if c.Held == 0 {
		return fmt.Sprintf("the first step, %d nodes, broke %s: the control plane holds fewer than %d nodes", broken, c.Broke, broken)
	}
	return fmt.Sprintf("held %d nodes; %d broke %s", c.Held, broken, c.Broke)
}

// HoldPhase names the phase of a step's hold, as fakelet capacity records it.
func HoldPhase(nodes int) string { return fmt.Sprintf("%d nodes", nodes) }

// capacityWarnings say which steps' holds fakelet's own send lag bounded (GeneratorBound): their
// levels measured the generator, not the control plane.
func (r *Report) capacityWarnings() []string {
	if r.Capacity == nil {
		return nil
	}
	var out []string
	for _, st := range r.Capacity.Steps {
		for _, ph := range r.Load.Phases {
			if ph.Name == HoldPhase(st.Nodes) && GeneratorBound(ph) {
				out = append(out, fmt.Sprintf("WARNING: fakelet's own send lag p99 was %.1f s in the hold of %d nodes (over %.0f s): that step measured the generator, not the control plane",
					ph.SendLag.P99, st.Nodes, GeneratorBoundLag))
			}
		}
	}
	return out
}

// writeCapacity writes the answer and a table of the steps.
func (c *Capacity) write(w io.Writer) {
	fmt.Fprintf(w, "capacity: %s\n", c.Answer())
	fmt.Fprintf(w, "  steps of %d from %d to %d nodes, each settling %s and held %s\n", c.Step, c.Start, c.Max, c.Settle, c.Hold)
	switch s := c.Shards; {
	case s != nil && s.Shard != "":
		fmt.Fprintf(w, "  shard %s: the answer is the fleet's, from every shard's verdicts; the levels below are this shard's (fakelet report merge gives the fleet's)\n", s.Shard)
	case s != nil:
		fmt.Fprintf(w, "  the fleet's levels, merged from its %d shards' reports\n", s.Count)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "nodes\t")
	for _, l := range c.levelNames() {
		fmt.Fprintf(tw, "%s\t", l)
	}
	for _, comp := range capacityComponents {
		fmt.Fprintf(tw, "%s CPU\t%s MiB\t", short(comp), short(comp))
	}
	fmt.Fprintln(tw)
	for _, st := range c.Steps {
		fmt.Fprintf(tw, "%d\t", st.Nodes)
		for _, name := range c.levelNames() {
			cell := "-"
			for _, l := range st.Levels {
				if l.Level == name {
					cell = l.format(l.Value)
					if l.Broken {
						cell += " !"
					}
				}
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		for _, comp := range capacityComponents {
			if p, ok := process(st, comp); ok {
				fmt.Fprintf(tw, "%.2f\t%.0f\t", p.CPUCores, p.MaxMemoryBytes/(1<<20))
			} else {
				fmt.Fprint(tw, "-\t-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "  (! broken; CPU in cores over the hold, memory the most seen in it)")
}

// capacityComponents are the control plane's components whose CPU and memory each step shows.
var capacityComponents = []string{load.APIServer, load.Etcd, load.ControllerManager}

func short(component string) string {
	return strings.TrimPrefix(strings.TrimPrefix(component, "kube-"), "controller-")
}

func process(st CapacityStep, component string) (load.Process, bool) {
	for _, p := range st.Processes {
		if p.Component == component {
			return p, true
		}
	}
	return load.Process{}, false
}

// levelNames are the levels of the steps, in the order of their first appearance.
func (c *Capacity) levelNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range c.Steps {
		for _, l := range st.Levels {
			if !seen[l.Level] {
				seen[l.Level] = true
				out = append(out, l.Level)
			}
		}
	}
	return out
}

// capacityCharts are each level against the fleet's size, with its limit, then the control plane's
// CPU and memory against it.
func (c *Capacity) charts() ([]*chart, error) {
	if len(c.Steps) == 0 {
		return nil, nil
	}
	var out []*chart
	for _, name := range c.levelNames() {
		ch, err := c.levelChart(name)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	for _, m := range []struct {
		title, ylabel string
		v             func(load.Process) float64
	}{
		{"Control plane CPU per step", "cores (average over the hold)", func(p load.Process) float64 { return p.CPUCores }},
		{"Control plane memory per step", "MiB (most seen in the hold)", func(p load.Process) float64 { return p.MaxMemoryBytes / (1 << 20) }},
	} {
		ch, err := c.processChart(m.ylabel, m.v)
		if err != nil {
			return nil, err
		}
		if ch != nil {
			ch.title = m.title
			out = append(out, ch)
		}
	}
	return out, nil
}

// addLinePoints draws a line with a mark at each step, and names it in the legend.
func (c *chart) addLinePoints(name string, ln *plotter.Line, pts *plotter.Scatter) {
	c.p.Add(ln, pts)
	c.legend.Add(name, ln, pts)
	c.lines = append(c.lines, line{name: name, color: ln.Color})
}

// fixSizeAxes starts y at 0 and leaves room above the highest value and limit, so that neither
// runs along the frame; a chart of zeros still shows 0 to 1.
func fixSizeAxes(c *chart, top float64) {
	c.p.Y.Min = 0
	c.p.Y.Max = max(top*1.15, 1e-9)
	if top <= 0 {
		c.p.Y.Max = 1
	}
}

func (c *Capacity) levelChart(name string) (*chart, error) {
	var unit string
	var values, limits plotter.XYs
	for _, st := range c.Steps {
		for _, l := range st.Levels {
			if l.Level == name && !math.IsNaN(l.Value) {
				unit = l.Unit
				values = append(values, plotter.XY{X: float64(st.Nodes), Y: l.Value})
				limits = append(limits, plotter.XY{X: float64(st.Nodes), Y: l.Limit})
			}
		}
	}
	ylabel := "count"
	if unit == "s" {
		ylabel = "seconds"
	}
	ch := newBesideChart("nodes", ylabel)
	ch.title = name + " against fleet size"
	colors := seriesColors(2)
	ln, pts, err := plotter.NewLinePoints(values)
	if err != nil {
		return nil, err
	}
	ln.Color, ln.Width = colors[0], vg.Points(2)
	pts.Color, pts.Radius = colors[0], vg.Points(3)
	ch.addLinePoints("measured", ln, pts)
	ll, err := plotter.NewLine(limits)
	if err != nil {
		return nil, err
	}
	ll.Color, ll.Width, ll.Dashes = colors[1], vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(3)}
	ch.p.Add(ll)
	ch.legend.Add("limit", ll)
	ch.lines = append(ch.lines, line{name: "limit", color: ll.Color})
	top := 0.0
	for i := range values {
		top = max(top, values[i].Y, limits[i].Y)
	}
	fixSizeAxes(ch, top)
	return ch, nil
}

func (c *Capacity) processChart(ylabel string, v func(load.Process) float64) (*chart, error) {
	ch := newBesideChart("nodes", ylabel)
	colors := seriesColors(len(capacityComponents))
	drawn, top := false, 0.0
	for i, comp := range capacityComponents {
		var xys plotter.XYs
		for _, st := range c.Steps {
			if p, ok := process(st, comp); ok {
				xys = append(xys, plotter.XY{X: float64(st.Nodes), Y: v(p)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		ln, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		ln.Color, ln.Width = colors[i], vg.Points(2)
		pts.Color, pts.Radius = colors[i], vg.Points(3)
		ch.addLinePoints(comp, ln, pts)
		for _, xy := range xys {
			top = max(top, xy.Y)
		}
		drawn = true
	}
	if !drawn {
		return nil, nil
	}
	fixSizeAxes(ch, top)
	return ch, nil
}

// capacityPerfData are the steps' levels in clusterloader2's format: one item per step and level,
// its value and limit in the level's unit.
func (c *Capacity) perfData() []DataItem {
	var out []DataItem
	for _, st := range c.Steps {
		for _, l := range st.Levels {
			if math.IsNaN(l.Value) {
				continue
			}
			out = append(out, DataItem{
				Data: map[string]float64{"Value": l.Value, "Limit": l.Limit},
				Unit: map[string]string{"": "count", "s": "s"}[l.Unit],
				Labels: map[string]string{
					"Metric": "Capacity", "Nodes": fmt.Sprint(st.Nodes), "Level": l.Level, "Broken": fmt.Sprint(l.Broken),
				},
			})
		}
	}
	return out
}
