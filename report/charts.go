package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"fakelet.dev/fakelet/measure/load"
)

// Chart is one rendered chart of the HTML report.
type Chart struct {
	Title string
	// SVG is the chart as an inline <svg> element.
	SVG string
}

// chart is a plot and its legend, which is drawn beside the data rather than over it.
type chart struct {
	title  string
	p      *plot.Plot
	legend plot.Legend
	// lines are the legend's series in order, with the colour each is drawn in.
	lines  []line
	height vg.Length
	// timed charts have the run's seconds on their x axis, the same range on each, drawn at the
	// same place on the page, so that one moment sits at one x in every chart.
	timed bool
	// beside charts (every timed one, and a capacity run's charts against fleet size) have their
	// legend in one column beside the data and their data areas aligned.
	beside bool
}

type line struct {
	name  string
	color color.Color
}

// Chart sizes.
const (
	chartWidth  = 24 * vg.Centimeter
	chartHeight = 10 * vg.Centimeter
)

// bandColors shade the phases, alternating.
var bandColors = []color.Color{
	color.RGBA{R: 0xee, G: 0xf2, B: 0xfa, A: 0xff},
	color.RGBA{R: 0xfa, G: 0xf3, B: 0xe8, A: 0xff},
}

// stateColors are Ready, NotReady and Unknown.
var stateColors = []color.Color{
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// Charts renders the report's charts.
func (r *Report) Charts() ([]Chart, error) {
	cs, err := r.charts()
	if err != nil {
		return nil, err
	}
	var out []Chart
	for i, f := range frames(cs, chartWidth) {
		s, err := renderSVG(cs[i], f, chartWidth)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", cs[i].title, err)
		}
		out = append(out, Chart{Title: cs[i].title, SVG: s})
	}
	return out, nil
}

// charts builds the report's charts, leaving out those without data.
func (r *Report) charts() ([]*chart, error) {
	var out []*chart
	if r.Capacity != nil {
		cs, err := r.Capacity.charts()
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	rates := r.requestRates()
	colors := kindColors(load.Keys(rates), load.Keys(r.latencyPoints()))
	for _, c := range []struct {
		title string
		build func() (*chart, error)
	}{
		{"Nodes by Ready status", r.nodeStateChart},
		{"Heartbeat requests per second (apiserver)", func() (*chart, error) {
			return r.pointsChart(rates, "requests/s", 1, colors, false)
		}},
		{"apiserver p99 request latency", func() (*chart, error) {
			return r.pointsChart(r.latencyPoints(), "p99 (ms, log scale)", 1000, colors, true)
		}},
		{"etcd WAL bytes written per second", func() (*chart, error) {
			return r.pointsChart(r.Load.Timeline.EtcdWALRate, "KiB/s", 1.0/1024, nil, false)
		}},
		{"Reaction latencies per group", r.reactionChart},
	} {
		ch, err := c.build()
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", c.title, err)
		}
		if ch != nil {
			ch.title = c.title
			out = append(out, ch)
		}
	}
	return out, nil
}

// secs is t as seconds from the start of the run: every timed chart's x axis.
func (r *Report) secs(t time.Time) float64 { return t.Sub(r.Start).Seconds() }

// newTimeChart is a chart of values over the run: its x axis is the whole run, whatever its data
// covers (rates begin at the second scrape, the nodes' timeline at the start).
func (r *Report) newTimeChart(y string) *chart {
	c := newBesideChart("seconds since start", y)
	c.p.X.Tick.Marker = secondsTicks{}
	c.timed = true
	return c
}

// newBesideChart is a chart with a grid and its legend beside the data.
func newBesideChart(x, y string) *chart {
	p := plot.New()
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.Padding = vg.Points(3)
	return &chart{p: p, legend: legend, height: chartHeight, beside: true}
}

// addLine draws l and names it in the legend.
func (c *chart) addLine(name string, l *plotter.Line) {
	c.p.Add(l)
	c.legend.Add(name, l)
	c.lines = append(c.lines, line{name: name, color: l.Color})
}

// fixX sets the x axis once every line is in: the run's time.
func (r *Report) fixX(c *chart) {
	c.p.X.Min, c.p.X.Max = 0, max(r.secs(r.End), 1)
}

// addBands shades each phase from bottom to top and names it.
func (r *Report) addBands(p *plot.Plot, bottom, top float64) error {
	if len(r.Phases) < 2 {
		return nil
	}
	var labels plotter.XYLabels
	for i, ph := range r.Phases {
		x0, x1 := r.secs(ph.Start), r.secs(ph.End)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: bottom}, {X: x1, Y: bottom}, {X: x1, Y: top}, {X: x0, Y: top}})
		if err != nil {
			return err
		}
		poly.Color = bandColors[i%len(bandColors)]
		poly.LineStyle.Width = 0
		p.Add(poly)
		labels.XYs = append(labels.XYs, plotter.XY{X: x0, Y: top})
		labels.Labels = append(labels.Labels, " "+ph.Name)
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].YAlign = -1.2
		l.TextStyle[i].Font.Size = vg.Points(9)
	}
	p.Add(l)
	return nil
}

func (r *Report) nodeStateChart() (*chart, error) {
	tl := r.Nodes.Timeline
	if len(tl) == 0 {
		return nil, nil
	}
	c := r.newTimeChart("nodes")
	series := []struct {
		name string
		v    func(i int) int
	}{
		{"Ready", func(i int) int { return tl[i].Ready }},
		{"NotReady", func(i int) int { return tl[i].NotReady }},
		{"Unknown", func(i int) int { return tl[i].Unknown }},
	}
	top := 1.0
	for i := range tl {
		top = max(top, float64(tl[i].Ready+tl[i].NotReady+tl[i].Unknown))
	}
	if err := r.addBands(c.p, 0, top*1.08); err != nil {
		return nil, err
	}
	for k, s := range series {
		xys := make(plotter.XYs, len(tl))
		for i := range tl {
			xys[i] = plotter.XY{X: r.secs(tl[i].At), Y: float64(s.v(i))}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = stateColors[k]
		l.Width = vg.Points(2)
		c.addLine(s.name, l)
	}
	r.fixX(c)
	c.p.Y.Min = 0
	return c, nil
}

// pointsChart draws one line per key of points, scaled by scale, in the colour colors gives it (else
// one of its own in the chart). On a log axis (latencies, whose registration burst would flatten
// every later phase to the floor of a linear one) a key missing from a point is a gap: no request
// of that kind, not a latency of zero. The log axis is a linear one of log10(value) with logTicks
// naming the values: gonum's LogScale centres the axis label on the mean of the axis's ends, which
// on a log axis sits near its top, and pads the chart's top by the label's height.
func (r *Report) pointsChart(points []load.Point, ylabel string, scale float64, colors map[string]color.Color, log bool) (*chart, error) {
	if len(points) == 0 {
		return nil, nil
	}
	c := r.newTimeChart(ylabel)
	keys := load.Keys(points)
	lo, hi := math.Inf(1), 0.0
	for _, pt := range points {
		for _, v := range pt.Values {
			if v*scale > 0 {
				lo, hi = min(lo, v*scale), max(hi, v*scale)
			}
		}
	}
	y := func(v float64) float64 { return v }
	bottom, top := 0.0, max(hi, 1e-9)*1.08
	if log {
		if hi == 0 {
			return nil, nil
		}
		y = math.Log10
		bottom, top = y(logFloor(lo)), y(hi*1.6) // room above the highest line for the phases' names
		c.p.Y.Tick.Marker = logTicks{}
		c.p.Y.Max = top
	}
	c.p.Y.Min = bottom
	if err := r.addBands(c.p, bottom, top); err != nil {
		return nil, err
	}
	own := seriesColors(len(keys))
	for i, k := range keys {
		col, ok := colors[k]
		if !ok {
			col = own[i]
		}
		var runs []plotter.XYs
		gap := true
		for _, pt := range points {
			v, ok := pt.Values[k]
			if log && (!ok || v <= 0) {
				gap = true
				continue
			}
			if gap {
				runs = append(runs, nil)
				gap = false
			}
			runs[len(runs)-1] = append(runs[len(runs)-1], plotter.XY{X: r.secs(pt.At), Y: y(v * scale)})
		}
		if err := c.addRuns(legendName(k), runs, col); err != nil {
			return nil, err
		}
	}
	r.fixX(c)
	return c, nil
}

// addRuns draws the runs of one series as lines of one colour, named once in the legend; a run of
// one point, which a line would not show, as a dot.
func (c *chart) addRuns(name string, runs []plotter.XYs, col color.Color) error {
	var thumb plot.Thumbnailer
	for _, run := range runs {
		if len(run) == 1 {
			s, err := plotter.NewScatter(run)
			if err != nil {
				return err
			}
			s.Color, s.Shape, s.Radius = col, draw.CircleGlyph{}, vg.Points(2)
			c.p.Add(s)
			continue
		}
		l, err := plotter.NewLine(run)
		if err != nil {
			return err
		}
		l.Color, l.Width = col, vg.Points(1.5)
		c.p.Add(l)
		if thumb == nil {
			thumb = l
		}
	}
	if thumb == nil { // dots alone: the legend shows their colour as a line all the same
		thumb = &plotter.Line{LineStyle: draw.LineStyle{Color: col, Width: vg.Points(1.5)}}
	}
	c.legend.Add(name, thumb)
	c.lines = append(c.lines, line{name: name, color: col})
	return nil
}

// legendName is how a chart's legend names a key of load's timeline.
func legendName(k string) string {
	if k == "*" {
		return "all but WATCH, CONNECT"
	}
	return k
}

// minorShare is the share of the busiest line below which a kind of request joins "other" in the
// request rate chart, so that the legend names what matters.
const minorShare = 0.05

// maxRequestLines bounds the request rate chart's lines, "other" among them: the kinds past the
// busiest join "other", so that every line keeps a colour of the eight that read well.
const maxRequestLines = 8

// requestRates are the request rate chart's points: watches left out, the minor kinds as "other".
func (r *Report) requestRates() []load.Point {
	points := r.Load.Timeline.RequestRate
	peak := map[string]float64{}
	var top float64
	for _, pt := range points {
		for k, v := range pt.Values {
			if strings.HasPrefix(k, "WATCH ") {
				continue
			}
			peak[k] = max(peak[k], v)
			top = max(top, v)
		}
	}
	var named []string
	for k, v := range peak {
		if k != "other" && v >= minorShare*top {
			named = append(named, k)
		}
	}
	sort.Slice(named, func(i, j int) bool {
		if peak[named[i]] != peak[named[j]] {
			return peak[named[i]] > peak[named[j]]
		}
		return named[i] < named[j]
	})
	if len(named) > maxRequestLines-1 {
		named = named[:maxRequestLines-1]
	}
	shown := map[string]bool{}
	for _, k := range named {
		shown[k] = true
	}
	folded := make([]load.Point, len(points))
	for i, pt := range points {
		vals := map[string]float64{}
		for k, v := range pt.Values {
			if strings.HasPrefix(k, "WATCH ") {
				continue
			}
			if !shown[k] {
				k = "other"
			}
			vals[k] += v
		}
		folded[i] = load.Point{At: pt.At, Values: vals}
	}
	return folded
}

// latencyKeys are the lines of the latency chart: every request but watches, and the heartbeats'
// and registrations'.
var latencyKeys = map[string]bool{"*": true, "PUT leases": true, "PATCH nodes/status": true, "PUT nodes/status": true,
	"GET nodes": true, "GET leases": true, "POST nodes": true}

// latencyPoints are the latency chart's points: the timeline's p99 of latencyKeys.
func (r *Report) latencyPoints() []load.Point {
	var out []load.Point
	for _, pt := range r.Load.Timeline.LatencyP99 {
		vals := map[string]float64{}
		for k, v := range pt.Values {
			if latencyKeys[k] {
				vals[k] = v
			}
		}
		out = append(out, load.Point{At: pt.At, Values: vals})
	}
	return out
}

// maxReactionBoxes bounds the reaction chart: the summaries with the most samples.
const maxReactionBoxes = 16

// reactionChart draws a horizontal box plot of the latencies of each reaction with samples.
func (r *Report) reactionChart() (*chart, error) {
	var idx []int
	for i, s := range r.Reactions {
		if len(s.Samples) > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	if len(idx) > maxReactionBoxes {
		sort.SliceStable(idx, func(a, b int) bool { return len(r.Reactions[idx[a]].Samples) > len(r.Reactions[idx[b]].Samples) })
		idx = idx[:maxReactionBoxes]
		sort.Ints(idx)
	}
	p := plot.New()
	p.X.Label.Text = "seconds (from the last heartbeat for stop, partition and denyAuth; else from the action)"
	p.Add(plotter.NewGrid())
	c := &chart{p: p}
	colors := seriesColors(len(idx))
	var names []string
	for row, i := range idx {
		s := r.Reactions[i]
		pos := float64(len(idx) - 1 - row) // first summary on top
		b, err := plotter.NewBoxPlot(vg.Points(14), pos, plotter.Values(s.Samples))
		if err != nil {
			return nil, err
		}
		b.Horizontal = true
		b.FillColor = colors[row]
		p.Add(b)
		name := fmt.Sprintf("%s %s %s: %s (%d)", s.Phase, s.Group, s.Op, s.Event, len(s.Samples))
		names = append(names, name)
		c.lines = append(c.lines, line{name: name, color: b.FillColor})
	}
	for a, b := 0, len(names)-1; a < b; a, b = a+1, b-1 {
		names[a], names[b] = names[b], names[a]
	}
	p.NominalY(names...)
	p.X.Min = 0
	c.height = max(6*vg.Centimeter, vg.Length(len(idx))*0.9*vg.Centimeter+3*vg.Centimeter)
	return c, nil
}
