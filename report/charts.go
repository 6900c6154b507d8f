package report

import (
	"bytes"
	"fmt"
	"image/color"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"fakelet.dev/fakelet/measure/load"
)

// Chart is one rendered chart of the HTML report.
type Chart struct {
	Title string
	// SVG is the chart as an inline <svg> element.
	SVG string
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
	var out []Chart
	for _, c := range []struct {
		title string
		build func() (*plot.Plot, vg.Length, error)
	}{
		{"Nodes by Ready status", r.nodeStateChart},
		{"Heartbeat requests per second (apiserver)", r.requestRateChart},
		{"apiserver p99 request latency", r.latencyChart},
		{"etcd WAL bytes written per second", r.walChart},
		{"Reaction latencies per group", r.reactionChart},
	} {
		p, h, err := c.build()
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", c.title, err)
		}
		if p == nil {
			continue
		}
		s, err := renderSVG(p, chartWidth, h)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", c.title, err)
		}
		out = append(out, Chart{Title: c.title, SVG: s})
	}
	return out, nil
}

func renderSVG(p *plot.Plot, w, h vg.Length) (string, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(w, h))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:] // drop the XML prolog: the element goes inline
	}
	return s, nil
}

// secs is t as seconds from the start of the run: every chart's x axis.
func (r *Report) secs(t time.Time) float64 { return t.Sub(r.Start).Seconds() }

func newPlot(title, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since start"
	p.X.Tick.Marker = secondsTicks{}
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
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

func (r *Report) nodeStateChart() (*plot.Plot, vg.Length, error) {
	tl := r.Nodes.Timeline
	if len(tl) == 0 {
		return nil, 0, nil
	}
	p := newPlot("", "nodes")
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
	if err := r.addBands(p, top*1.08); err != nil {
		return nil, 0, err
	}
	for k, s := range series {
		xys := make(plotter.XYs, len(tl))
		for i := range tl {
			xys[i] = plotter.XY{X: r.secs(tl[i].At), Y: float64(s.v(i))}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, 0, err
		}
		l.Color = stateColors[k]
		l.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	p.Y.Min = 0
	return p, chartHeight, nil
}

// pointsChart draws one line per key of points, scaled by scale.
func (r *Report) pointsChart(points []load.Point, ylabel string, scale float64, keep func(string) bool) (*plot.Plot, vg.Length, error) {
	if len(points) == 0 {
		return nil, 0, nil
	}
	p := newPlot("", ylabel)
	var top float64
	for _, pt := range points {
		for k, v := range pt.Values {
			if keep(k) {
				top = max(top, v*scale)
			}
		}
	}
	if err := r.addBands(p, max(top, 1e-9)*1.08); err != nil {
		return nil, 0, err
	}
	i := 0
	for _, k := range load.Keys(points) {
		if !keep(k) {
			continue
		}
		var xys plotter.XYs
		for _, pt := range points {
			v, ok := pt.Values[k]
			if !ok {
				v = 0
			}
			xys = append(xys, plotter.XY{X: r.secs(pt.At), Y: v * scale})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, 0, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i / 7)
		p.Add(l)
		p.Legend.Add(k, l)
		i++
	}
	p.Y.Min = 0
	return p, chartHeight, nil
}

// minorShare is the share of the busiest line below which a kind of request joins "other" in the
// request rate chart, so that the legend names what matters.
const minorShare = 0.05

func (r *Report) requestRateChart() (*plot.Plot, vg.Length, error) {
	points := r.Load.Timeline.RequestRate
	peak := map[string]float64{}
	var top float64
	for _, pt := range points {
		for k, v := range pt.Values {
			peak[k] = max(peak[k], v)
			top = max(top, v)
		}
	}
	folded := make([]load.Point, len(points))
	for i, pt := range points {
		vals := map[string]float64{}
		for k, v := range pt.Values {
			if strings.HasPrefix(k, "WATCH ") {
				continue
			}
			if peak[k] < minorShare*top {
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

func (r *Report) latencyChart() (*plot.Plot, vg.Length, error) {
	return r.pointsChart(r.Load.Timeline.LatencyP99, "p99 (ms)", 1000, func(k string) bool { return latencyKeys[k] })
}

func (r *Report) walChart() (*plot.Plot, vg.Length, error) {
	return r.pointsChart(r.Load.Timeline.EtcdWALRate, "KiB/s", 1.0/1024, func(string) bool { return true })
}

// maxReactionBoxes bounds the reaction chart: the summaries with the most samples.
const maxReactionBoxes = 16

// reactionChart draws a horizontal box plot of the latencies of each reaction with samples.
func (r *Report) reactionChart() (*plot.Plot, vg.Length, error) {
	var idx []int
	for i, s := range r.Reactions {
		if len(s.Samples) > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, 0, nil
	}
	if len(idx) > maxReactionBoxes {
		sort.SliceStable(idx, func(a, b int) bool { return len(r.Reactions[idx[a]].Samples) > len(r.Reactions[idx[b]].Samples) })
		idx = idx[:maxReactionBoxes]
		sort.Ints(idx)
	}
	p := plot.New()
	p.X.Label.Text = "seconds (from the last heartbeat for stop, partition and denyAuth; else from the action)"
	p.Add(plotter.NewGrid())
	var names []string
	for row, i := range idx {
		s := r.Reactions[i]
		pos := float64(len(idx) - 1 - row) // first summary on top
		b, err := plotter.NewBoxPlot(vg.Points(14), pos, plotter.Values(s.Samples))
		if err != nil {
			return nil, 0, err
		}
		b.Horizontal = true
		b.FillColor = plotutil.Color(row)
		p.Add(b)
		names = append(names, fmt.Sprintf("%s %s %s: %s (%d)", s.Phase, s.Group, s.Op, s.Event, len(s.Samples)))
	}
	for a, b := 0, len(names)-1; a < b; a, b = a+1, b-1 {
		names[a], names[b] = names[b], names[a]
	}
	p.NominalY(names...)
	p.X.Min = 0
	h := max(6*vg.Centimeter, vg.Length(len(idx))*0.9*vg.Centimeter+3*vg.Centimeter)
	return p, h, nil
}
