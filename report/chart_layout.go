package report

import (
	"bytes"
	"image/color"
	"strings"

	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// legendGap is the space between a chart's data and its legend.
const legendGap = 0.4 * vg.Centimeter

// frame is where a chart's parts go on its canvas: the plot (its axes and data) and the legend,
// beside the data so that it never covers a line.
type frame struct {
	plot, legend vg.Rectangle
}

// frames lays out charts of width w. The timed charts (and the others beside) share one legend column, as wide as their
// widest legend, and their plots are inset so that their data areas coincide: gonum sizes each
// y axis by its labels, which would shift one chart's time axis against another's.
func frames(cs []*chart, w vg.Length) []frame {
	var legendW vg.Length
	for _, c := range cs {
		if c.beside {
			legendW = max(legendW, c.legend.Rectangle(draw.Canvas{}).Size().X)
		}
	}
	plotW := w
	if legendW > 0 {
		plotW = w - legendW - legendGap
	}
	// left and right are the room each timed chart's axes and padding take beside its data.
	left, right := make([]vg.Length, len(cs)), make([]vg.Length, len(cs))
	var maxLeft, maxRight vg.Length
	for i, c := range cs {
		if !c.beside {
			continue
		}
		area := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: plotW, Y: c.height}}}
		data := c.p.DataCanvas(area)
		left[i], right[i] = data.Min.X-area.Min.X, area.Max.X-data.Max.X
		maxLeft, maxRight = max(maxLeft, left[i]), max(maxRight, right[i])
	}
	out := make([]frame, len(cs))
	for i, c := range cs {
		if !c.beside {
			out[i] = frame{plot: vg.Rectangle{Max: vg.Point{X: w, Y: c.height}}}
			continue
		}
		out[i].plot = vg.Rectangle{
			Min: vg.Point{X: maxLeft - left[i]},
			Max: vg.Point{X: plotW - (maxRight - right[i]), Y: c.height},
		}
		data := c.p.DataCanvas(draw.Canvas{Rectangle: out[i].plot})
		out[i].legend = vg.Rectangle{
			Min: vg.Point{X: w - legendW, Y: data.Min.Y},
			Max: vg.Point{X: w, Y: data.Max.Y},
		}
	}
	return out
}

// drawChart draws c in frame f on dc.
func drawChart(dc vg.Canvas, c *chart, f frame) {
	c.p.Draw(draw.Canvas{Canvas: dc, Rectangle: f.plot})
	if c.beside {
		c.legend.Draw(draw.Canvas{Canvas: dc, Rectangle: f.legend})
	}
}

func renderSVG(c *chart, f frame, w vg.Length) (string, error) {
	svg := vgsvg.NewWith(vgsvg.UseWH(w, c.height))
	drawChart(svg, c, f)
	var buf bytes.Buffer
	if _, err := svg.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:] // drop the XML prolog: the element goes inline
	}
	return s, nil
}

// seriesColors returns n colours, no two alike: ColorBrewer's Dark2, whose eight read well as
// lines on white and on the phase bands, then four more as far from them (and each other), and
// past twelve, hues evenly spaced around the wheel.
func seriesColors(n int) []color.Color {
	if n <= len(lineColors) {
		return lineColors[:n]
	}
	return palette.Rainbow(n, 0, palette.Hue(1-1/float64(n)), 0.8, 0.7, 1).Colors()
}

// lineColors are seriesColors' first twelve: any two at least 30 apart in CIELAB (ΔE76), as far as
// Dark2's nearest two, its mustard and brown.
var lineColors = append(brewer.Dark2[8].Colors(),
	color.RGBA{A: 0xff},                            // black
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
	color.RGBA{R: 0x80, A: 0xff},                   // maroon
	color.RGBA{G: 0x40, B: 0xff, A: 0xff},          // blue
)

// kindColors gives each request kind of the request rate and latency charts one colour, the same
// in both, so that PUT leases reads as one line from chart to chart: the rate chart's kinds in its
// order, then the latency chart's own.
func kindColors(kindsOfCharts ...[]string) map[string]color.Color {
	var kinds []string
	seen := map[string]bool{}
	for _, ks := range kindsOfCharts {
		for _, k := range ks {
			if !seen[k] {
				seen[k] = true
				kinds = append(kinds, k)
			}
		}
	}
	m := make(map[string]color.Color, len(kinds))
	for i, c := range seriesColors(len(kinds)) {
		m[kinds[i]] = c
	}
	return m
}
