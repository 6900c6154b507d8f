package report

import (
	"fmt"
	"image/color"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

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
	for _, c := range []struct {
		title string
		build func() (*chart, error)
	}{
		{"Nodes by Ready status", r.nodeStateChart},
		{"Heartbeat requests per second (apiserver)", r.requestRateChart},
		{"apiserver p99 request latency", r.latencyChart},
		{"etcd WAL bytes written per second", r.walChart},
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

// fixAxes sets the axes once every line is in: the run's time along x, and y from 0.
func (r *Report) fixAxes(c *chart) {
	c.p.X.Min, c.p.X.Max = 0, max(r.secs(r.End), 1)
	c.p.Y.Min = 0
}

// addBands shades each phase from 0 to top and names it.
func (r *Report) addBands(p *plot.Plot, top float64) error {
	if len(r.Phases) < 2 {
		return nil
	}
	var labels plotter.XYLabels
	for i, ph := range r.Phases {
		x0, x1 := r.secs(ph.Start), r.secs(ph.End)
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: top}, {X: x0, Y: top}})
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
	if err := r.addBands(c.p, top*1.08); err != nil {
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
	r.fixAxes(c)
	return c, nil
}

// pointsChart draws one line per key of points, scaled by scale, each in a colour of its own.
func (r *Report) pointsChart(points []load.Point, ylabel string, scale float64, keep func(string) bool) (*chart, error) {
	if len(points) == 0 {
		return nil, nil
	}
	c := r.newTimeChart(ylabel)
	var top float64
	for _, pt := range points {
		for k, v := range pt.Values {
			if keep(k) {
				top = max(top, v*scale)
			}
		}
	}
	if err := r.addBands(c.p, max(top, 1e-9)*1.08); err != nil {
		return nil, err
	}
	var keys []string
	for _, k := range load.Keys(points) {
		if keep(k) {
			keys = append(keys, k)
		}
	}
	colors := seriesColors(len(keys))
	for i, k := range keys {
		var xys plotter.XYs
		for _, pt := range points {
			xys = append(xys, plotter.XY{X: r.secs(pt.At), Y: pt.Values[k] * scale})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = colors[i]
		l.Width = vg.Points(1.5)
		c.addLine(k, l)
	}
	r.fixAxes(c)
	return c, nil
}

// minorShare is the share of the busiest line below which a kind of request joins "other" in the
// request rate chart, so that the legend names what matters.
const minorShare = 0.05

// maxRequestLines bounds the request rate chart's lines, "other" among them: the kinds past the
// busiest join "other", so that every line keeps a colour of the eight that read well.
const maxRequestLines = 8

func (r *Report) requestRateChart() (*chart, error) {
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
	return r.pointsChart(folded, "requests/s", 1, func(string) bool { return true })
}

// latencyKeys are the lines of the latency chart: every request but watches, and the heartbeats'.
var latencyKeys = map[string]bool{"*": true, "PUT leases": true, "PATCH nodes/status": true, "PUT nodes/status": true, "GET nodes": true, "GET leases": true}

func (r *Report) latencyChart() (*chart, error) {
	return r.pointsChart(r.Load.Timeline.LatencyP99, "p99 (ms)", 1000, func(k string) bool { return latencyKeys[k] })
}

func (r *Report) walChart() (*chart, error) {
	return r.pointsChart(r.Load.Timeline.EtcdWALRate, "KiB/s", 1.0/1024, func(string) bool { return true })
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
