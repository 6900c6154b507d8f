package report

import (
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"fakelet.dev/fakelet/measure/load"
)

// burstReport is busyFixture's report with the latencies of a registration burst: every request's
// p99 at 15 s in the first scrape (the nodes' POSTs 14 s), 2 s in the next, tens of milliseconds
// after; GET leases only in every third scrape.
func burstReport() *Report {
	r := build(busyFixture())
	var pts []load.Point
	for s := 15.0; s <= 240; s += 15 {
		v := map[string]float64{"*": 0.03, "PUT leases": 0.008, "PATCH nodes/status": 0.012}
		switch s {
		case 15:
			v["*"], v["GET nodes"], v["POST nodes"] = 15, 0.4, 14
		case 30:
			v["*"] = 2
		}
		if int(s)%45 == 0 {
			v["GET leases"] = 0.004
		}
		pts = append(pts, load.Point{At: at(s), Values: v})
	}
	r.Load.Timeline.LatencyP99 = pts
	return r
}

// renderedCharts is r's charts as report.html holds them, by title.
func renderedCharts(t *testing.T, r *Report) map[string]string {
	t.Helper()
	cs, err := r.Charts()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, c := range cs {
		m[c.Title] = c.SVG
	}
	return m
}

// svgText matches a text element of gonum's SVG: its y (negated: the canvas is flipped) and text.
var svgText = regexp.MustCompile(`<text x="[-0-9.]+" y="([-0-9.]+)"[^>]*>([^<]*)</text>`)

// svgLegendEntry matches a legend entry: the line drawn as its thumbnail, then its name.
var svgLegendEntry = regexp.MustCompile(`<path d="M[-0-9.,]+L[-0-9.,]+" style="fill:none;stroke:#([0-9A-F]{6});[^"]*" />\s*<text[^>]*>([^<]*)</text>`)

// legendColors is the colour of each name in svg's legend.
func legendColors(svg string) map[string]string {
	m := map[string]string{}
	for _, e := range svgLegendEntry.FindAllStringSubmatch(svg, -1) {
		m[e[2]] = e[1]
	}
	return m
}

// The latency chart's legend names each line in words: "*" was the key of every request but
// watches, drawn as a series named "*".
func TestLatencyLegendNamesEveryLine(t *testing.T) {
	svg := renderedCharts(t, burstReport())["apiserver p99 request latency"]
	var names []string
	for name := range legendColors(svg) {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"GET leases", "GET nodes", "PATCH nodes/status", "POST nodes", "PUT leases", "all but WATCH, CONNECT"}
	if !slices.Equal(names, want) {
		t.Errorf("legend %q, want %q", names, want)
	}
	for _, m := range svgText.FindAllStringSubmatch(svg, -1) {
		if m[2] == "*" {
			t.Errorf("a text %q in the latency chart", m[2])
		}
	}
}

// The latency axis is logarithmic, its decades evenly spaced on the page: on a linear one the
// burst's 15 s drew the later phases' tens of milliseconds along the floor (labels 0, 5000,
// 10000, 15000).
func TestLatencyAxisIsLogarithmic(t *testing.T) {
	svg := renderedCharts(t, burstReport())["apiserver p99 request latency"]
	y := map[string]float64{}
	for _, m := range svgText.FindAllStringSubmatch(svg, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		y[m[2]] = -v
	}
	decades := []string{"10", "100", "1000", "10000"}
	for _, d := range decades {
		if _, ok := y[d]; !ok {
			t.Fatalf("no tick labelled %s (labels at %v)", d, y)
		}
	}
	step := y["100"] - y["10"]
	for i := 1; i < len(decades); i++ {
		if got := y[decades[i]] - y[decades[i-1]]; math.Abs(got-step) > 0.5 || got <= 0 {
			t.Errorf("%s to %s: %.1f points, %s to %s: %.1f", decades[i-1], decades[i], got, "10", "100", step)
		}
	}
	if _, ok := y["5000"]; ok {
		t.Errorf("a linear tick labelled 5000")
	}
}

// Every line of a chart has a colour of its own, at least 30 apart in CIELAB from every other's
// (Dark2's nearest two), and a request kind keeps its colour from the request rate chart to the
// latency chart: PUT leases was Dark2's sixth in one and its fourth in the other.
func TestRenderedLinesHaveDistinctSharedColours(t *testing.T) {
	charts := renderedCharts(t, burstReport())
	rates := legendColors(charts["Heartbeat requests per second (apiserver)"])
	latency := legendColors(charts["apiserver p99 request latency"])
	shared := 0
	for name, c := range latency {
		if rc, ok := rates[name]; ok {
			shared++
			if rc != c {
				t.Errorf("%s: #%s in the request rates, #%s in the latencies", name, rc, c)
			}
		}
	}
	if shared < 3 {
		t.Errorf("%d kinds in both charts, want PUT leases, GET nodes and POST nodes at least", shared)
	}
	for title, legend := range map[string]map[string]string{"rates": rates, "latency": latency} {
		for a, ca := range legend {
			for b, cb := range legend {
				if a < b {
					if d := deltaE(hexColor(t, ca), hexColor(t, cb)); d < 30 {
						t.Errorf("%s: %s (#%s) and %s (#%s) %.1f apart", title, a, ca, b, cb, d)
					}
				}
			}
		}
	}
	for i, a := range lineColors {
		for _, b := range lineColors[i+1:] {
			if d := deltaE(a, b); d < 30 {
				t.Errorf("lineColors %v and %v: %.1f apart", a, b, d)
			}
		}
	}
}

func hexColor(t *testing.T, h string) color.Color {
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// deltaE is the CIE76 distance of a and b: their distance in CIELAB under D65.
func deltaE(a, b color.Color) float64 {
	la, lb := toLab(a), toLab(b)
	return math.Sqrt((la[0]-lb[0])*(la[0]-lb[0]) + (la[1]-lb[1])*(la[1]-lb[1]) + (la[2]-lb[2])*(la[2]-lb[2]))
}

func toLab(c color.Color) [3]float64 {
	r16, g16, b16, _ := c.RGBA()
	lin := func(v uint32) float64 {
		s := float64(v) / 0xffff
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	r, g, b := lin(r16), lin(g16), lin(b16)
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return t*24389/27/116 + 16.0/116
	}
	x := f((0.4124*r + 0.3576*g + 0.1805*b) / 0.95047)
	y := f(0.2126*r + 0.7152*g + 0.0722*b)
	z := f((0.0193*r + 0.1192*g + 0.9505*b) / 1.08883)
	return [3]float64{116*y - 16, 500 * (x - y), 200 * (y - z)}
}
