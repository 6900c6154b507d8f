package report

import (
	"fmt"
	"image/color"
	"math"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/scrape"
)

// busyFixture is fixture with the requests a run sends about nodes and leases besides its
// heartbeats, each above the share that folds a kind into "other": more kinds than the request
// rate chart has colours for.
func busyFixture() observed {
	rec := fixture()
	kinds := [][3]string{
		{"GET", "leases", ""}, {"POST", "leases", ""}, {"GET", "nodes", ""}, {"POST", "nodes", ""},
		{"LIST", "nodes", ""}, {"PATCH", "nodes", ""}, {"PUT", "nodes", "status"}, {"GET", "nodes", "status"},
	}
	for i := range rec.Snapshots {
		s := &rec.Snapshots[i]
		if s.Component != load.APIServer {
			continue
		}
		secs := s.At.Sub(rec.Start).Seconds()
		total := s.Families["apiserver_request_total"].Series
		for k, kind := range kinds {
			key := fmt.Sprintf("%s|%s|%s|200", kind[0], kind[1], kind[2])
			total[key] = &scrape.Series{Labels: []string{kind[0], kind[1], kind[2], "200"}, Value: secs * (0.3 + 0.1*float64(k))}
		}
	}
	return rec
}

// onePhase is fixture as a run without a profile: one phase, so no bands reach back to the start.
func onePhase() observed {
	rec := fixture()
	rec.Phases = nil
	return rec
}

func buildCharts(t *testing.T, rec observed) []*chart {
	t.Helper()
	cs, err := build(rec).charts()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Every chart over time spans the whole run, 0 to 240 s, and puts it at the same place on the
// page, its data area reaching as high as the others': a reader lines up a rise in one chart with a rise in
// another by eye.
func TestTimedChartsShareOneTimeAxis(t *testing.T) {
	for name, r := range map[string]*Report{"phases": build(busyFixture()), "one phase": build(onePhase()), "burst": burstReport()} {
		t.Run(name, func(t *testing.T) {
			cs, err := r.charts()
			if err != nil {
				t.Fatal(err)
			}
			fs := frames(cs, chartWidth)
			var timed int
			var first draw.Canvas
			for i, c := range cs {
				if !c.timed {
					continue
				}
				timed++
				if c.p.X.Min != 0 || c.p.X.Max != 240 {
					t.Errorf("%s: x from %v to %v s, want the run, 0 to 240 s", c.title, c.p.X.Min, c.p.X.Max)
				}
				data := c.p.DataCanvas(draw.Canvas{Rectangle: fs[i].plot})
				// The tops may differ by half a tick label (10 points high), which gonum leaves above
				// one at the axis's end.
				if timed == 1 {
					first = data
				} else if data.Min.X != first.Min.X || data.Max.X != first.Max.X || math.Abs(float64(data.Max.Y-first.Max.Y)) > 6 {
					t.Errorf("%s: data from x=%v to %v, up to y=%v; the first chart's from %v to %v, up to %v",
						c.title, data.Min.X, data.Max.X, data.Max.Y, first.Min.X, first.Max.X, first.Max.Y)
				}
			}
			if timed != 4 {
				t.Errorf("%d charts over time, want 4 (states, request rate, latency, WAL)", timed)
			}
		})
	}
}

// No two lines of a chart share a colour, even when the request rate chart has more kinds than a
// palette of seven (GET leases and POST nodes were both red, told apart by dashes only).
func TestChartLinesHaveDistinctColours(t *testing.T) {
	for _, c := range buildCharts(t, busyFixture()) {
		if c.title == "Heartbeat requests per second (apiserver)" && len(c.lines) != maxRequestLines {
			t.Errorf("%s: %d lines, want %d (the fixture has more kinds)", c.title, len(c.lines), maxRequestLines)
		}
		seen := map[color.RGBA]string{}
		for _, l := range c.lines {
			r, g, b, a := l.color.RGBA()
			rgba := color.RGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: uint8(a >> 8)}
			if other, ok := seen[rgba]; ok {
				t.Errorf("%s: %q and %q are both %v", c.title, other, l.name, rgba)
			}
			seen[rgba] = l.name
		}
	}
	for _, n := range []int{1, 8, 9, 16} {
		if got := len(distinct(seriesColors(n))); got != n {
			t.Errorf("seriesColors(%d): %d distinct", n, got)
		}
	}
}

func distinct(cs []color.Color) map[[4]uint32]bool {
	m := map[[4]uint32]bool{}
	for _, c := range cs {
		r, g, b, a := c.RGBA()
		m[[4]uint32{r, g, b, a}] = true
	}
	return m
}

// Each legend's names are drawn to the right of the data, where no line runs.
func TestLegendsBesideTheData(t *testing.T) {
	capacityCharts, err := capacityFixture().charts()
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range [][]*chart{buildCharts(t, busyFixture()), capacityCharts} {
		legendsBesideTheData(t, cs)
	}
}

func legendsBesideTheData(t *testing.T, cs []*chart) {
	beside := 0
	for i, f := range frames(cs, chartWidth) {
		c := cs[i]
		if !c.beside {
			continue
		}
		beside++
		var rec recorder.Canvas
		drawChart(&rec, c, f)
		data := c.p.DataCanvas(draw.Canvas{Rectangle: f.plot})
		names := map[string]bool{}
		for _, l := range c.lines {
			names[l.name] = true
		}
		found := 0
		for _, a := range rec.Actions {
			s, ok := a.(*recorder.FillString)
			if !ok || !names[s.String] {
				continue
			}
			found++
			if s.Point.X <= data.Max.X {
				t.Errorf("%s: legend entry %q at x=%v, within the data (x up to %v)", c.title, s.String, s.Point.X, data.Max.X)
			}
		}
		if found < len(c.lines) {
			t.Errorf("%s: %d of %d legend entries drawn", c.title, found, len(c.lines))
		}
	}
	if beside < len(cs)-1 { // the reaction chart alone draws no legend
		t.Errorf("%d of %d charts have their legend beside the data", beside, len(cs))
	}
}
