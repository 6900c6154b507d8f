package e2e

import (
	"context"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/fleettest"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/source"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/report"
	"fakelet.dev/fakelet/scenario"
)

// monitorPeriod is the node lifecycle controller's --node-monitor-period (the default).
const monitorPeriod = 5 * time.Second

const stopAndStart = `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata:
  name: e2e-report
  description: Stop three of twelve nodes for 35 s and bring them back.
spec:
  nodes: 12
  groups:
    victims: {count: 3}
  phases:
  - name: steady
    duration: 5s
  - name: outage
    duration: 35s
    actions:
    - {group: victims, do: stop}
  - name: recovery
    duration: 15s
    actions:
    - {group: victims, do: start}
`

// TestReportOfAStopAndAStart runs a profile with the real runner and measures it as fakelet run
// does: the victims turn Unknown between the grace period and one monitor period (plus 2 s) after
// their last heartbeat, are Ready within seconds of their start, and the report renders. Each phase
// holds what the test asks of it and a little more: a victim's last renewal comes at the latest at its
// stop, so it turns Unknown within 27 s of the outage's start (8 s to spare), and Ready and untainted
// within 10 s of the recovery's (5 s to spare).
func TestReportOfAStopAndAStart(t *testing.T) {
	cp := controlPlane(t)
	prof, err := profiles.Parse("e2e-report.yaml", []byte(stopAndStart))
	if err != nil {
		t.Fatal(err)
	}
	cfg := fleet.Config{Fleet: "report", NamePrefix: "report", RegisterQPS: 50, Zones: 1, ZoneOf: profiles.ZoneOf}
	plan, f, s := measuredFleet(t, cp, prof, cfg, measure.Options{ScrapeInterval: 5 * time.Second, WatchLeases: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := playMeasured(t, ctx, cp, s, plan, f, record.Parameters{Nodes: plan.Nodes, Mode: "lease"}, "e2e", nil)

	unknown := summary(t, r, "outage", "stop", reaction.ReadyUnknown)
	if unknown.Reacted != 3 || unknown.Missing != 0 || unknown.FromLastRenewal == nil {
		t.Fatalf("ready_unknown: %d of %d reacted, %d missing (%v), from last renewal %+v; want all 3",
			unknown.Reacted, unknown.Actions, unknown.Missing, unknown.MissingNodes, unknown.FromLastRenewal)
	}
	lo, hi := gracePeriod.Seconds(), (gracePeriod + monitorPeriod + 2*time.Second).Seconds()
	if st := unknown.FromLastRenewal; st.Min < lo || st.Max > hi {
		t.Errorf("last renewal to Unknown: %.1f-%.1f s, want within [%.0f, %.0f] s", st.Min, st.Max, lo, hi)
	}
	taint := summary(t, r, "outage", "stop", "taint_unreachable_noschedule_added")
	if taint.Reacted != 3 {
		t.Errorf("unreachable NoSchedule taint on %d of 3 victims", taint.Reacted)
	}
	ready := summary(t, r, "recovery", "start", reaction.ReadyTrue)
	if ready.Reacted != 3 || ready.FromAction.Max > 5 {
		t.Errorf("start to Ready: %d of 3, latest after %.1f s; want all within 5 s", ready.Reacted, ready.FromAction.Max)
	}
	untaint := summary(t, r, "recovery", "start", "taint_unreachable_noschedule_removed")
	if untaint.Reacted != 3 || untaint.FromAction.Max > (monitorPeriod+5*time.Second).Seconds() {
		t.Errorf("start to untainted: %d of 3, latest after %.1f s; want all within 10 s", untaint.Reacted, untaint.FromAction.Max)
	}
	// The victims' reactions are the profile's; the nine others were kept healthy throughout.
	if len(r.FalseAlarms) > 0 {
		t.Errorf("false alarms %+v, want none", r.FalseAlarms)
	}
	if lag := r.Load.Run.SendLag; lag == nil || lag.Ticks == 0 || r.GeneratorBound {
		t.Errorf("send lag %+v, generator bound %v: want renewals' lag measured, under a second", lag, r.GeneratorBound)
	}
	if end := r.Nodes.Timeline[len(r.Nodes.Timeline)-1]; end.Ready != 12 {
		t.Errorf("at the end %+v, want 12 Ready", end)
	}
	outage := r.Load.Phases[1]
	if v, ok := report.LoadRows[1].Value(outage); !ok || v <= 0 { // PUT leases/s
		t.Errorf("no lease renewals measured in the outage: %v %v", v, ok)
	}
	if outage.Etcd == nil || outage.Etcd.WALBytes <= 0 {
		t.Errorf("no etcd writes measured in the outage: %+v", outage.Etcd)
	}

	dir := t.TempDir()
	if err := r.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	screenshotShowsCharts(t, filepath.Join(dir, report.HTMLFile))
}

func summary(t *testing.T, r *report.Report, phase, op, event string) reaction.Summary {
	t.Helper()
	for _, s := range r.Reactions {
		if s.Phase == phase && s.Group == "victims" && s.Op == op && s.Event == event {
			return s
		}
	}
	t.Fatalf("no %s of victims %s in %s", event, op, phase)
	return reaction.Summary{}
}

// screenshotShowsCharts opens the page in headless Chromium (Debian's chromium package) and checks
// that the screenshot holds charts: many distinct colours, and the Ready line's green.
func screenshotShowsCharts(t *testing.T, page string) {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if browser, err = exec.LookPath("chromium-browser"); err != nil {
			t.Fatal("the screenshot test needs headless Chromium: apt-get install -y chromium")
		}
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--window-size=1100,3000", "--screenshot="+shot, "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	fh, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	img, err := png.Decode(fh)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colours, nonWhite, green := picture(img)
	total := img.Bounds().Dx() * img.Bounds().Dy()
	t.Logf("screenshot %v: %d distinct colours, %.1f%% not white, %d pixels of the Ready green", img.Bounds().Size(), colours, 100*float64(nonWhite)/float64(total), green)
	if colours < 50 || float64(nonWhite) < 0.05*float64(total) || green < 200 {
		t.Errorf("the page does not look like charts: %d colours, %d of %d pixels not white, %d Ready green", colours, nonWhite, total, green)
	}
	chartsShareAxisAndColours(t, img)
}

// timedCharts is how many charts of the page have the run's time along x (states, request rate,
// latency, WAL), above the reactions' chart.
const timedCharts = 4

// chartsShareAxisAndColours checks the charts over time in the screenshot: their x axes are one
// line each, at the same place from left to right, and their legends lie to the right of the axis's
// end, one swatch per line, no two of a chart in one colour.
func chartsShareAxisAndColours(t *testing.T, img image.Image) {
	t.Helper()
	axes := axisLines(img)
	t.Logf("x axes (row, from, to): %v", axes)
	if len(axes) < timedCharts {
		t.Fatalf("%d x axes in the screenshot, want at least %d", len(axes), timedCharts)
	}
	for _, a := range axes[1:timedCharts] {
		if abs(a.x0-axes[0].x0) > 1 || abs(a.x1-axes[0].x1) > 1 {
			t.Errorf("an x axis runs from %d to %d px, the first from %d to %d: the charts' time axes differ", a.x0, a.x1, axes[0].x0, axes[0].x1)
		}
	}
	top := 0
	for k, a := range axes[:timedCharts] {
		swatches := legendSwatches(img, a.x1+2, top, a.y)
		top = a.y + 1
		t.Logf("chart %d: legend swatches %v", k+1, swatches)
		if len(swatches) == 0 || (k == 0 && len(swatches) != 3) {
			t.Errorf("chart %d: %d legend swatches right of the data, want %s", k+1, len(swatches), map[bool]string{true: "3 (Ready, NotReady, Unknown)", false: "some"}[k == 0])
		}
		for i := range swatches {
			for j := range i {
				if nearColour(swatches[i], swatches[j]) {
					t.Errorf("chart %d: legend swatches %d and %d share a colour, %v and %v", k+1, j+1, i+1, swatches[j], swatches[i])
				}
			}
		}
	}
}

// axisLine is a row of dark grey at least a third of the screenshot wide: a chart's x axis.
type axisLine struct{ y, x0, x1 int }

func axisLines(img image.Image) []axisLine {
	b := img.Bounds()
	var out []axisLine
	for y := b.Min.Y; y < b.Max.Y; y++ {
		x0 := -1
		for x := b.Min.X; x <= b.Max.X; x++ {
			dark := false
			if x < b.Max.X {
				c := rgb(img, x, y)
				dark = c[0] == c[1] && c[1] == c[2] && c[0] < 160
			}
			if dark && x0 < 0 {
				x0 = x
			}
			if !dark && x0 >= 0 {
				if x-x0 >= b.Dx()/3 {
					// an antialiased line covers two or three rows
					if n := len(out); n > 0 && out[n-1].y >= y-2 && out[n-1].x0 == x0 {
						out[n-1].y = y
					} else {
						out = append(out, axisLine{y, x0, x - 1})
					}
				}
				x0 = -1
			}
		}
	}
	return out
}

// legendSwatches returns the colour of each legend swatch (a short coloured line, 15 px or more)
// right of x between rows y0 and y1: of the rows a swatch covers, the most saturated, as the rows at
// its edges are blended with the white.
func legendSwatches(img image.Image, x, y0, y1 int) [][3]uint32 {
	var out [][3]uint32
	lastY := -10
	for y := y0; y < y1; y++ {
		c, ok := swatchIn(img, x, y)
		if !ok {
			continue
		}
		if y-lastY > 1 {
			out = append(out, c)
		} else if saturation(c) > saturation(out[len(out)-1]) {
			out[len(out)-1] = c
		}
		lastY = y
	}
	return out
}

func swatchIn(img image.Image, xmin, y int) ([3]uint32, bool) {
	b := img.Bounds()
	for x := xmin; x < b.Max.X; x++ {
		c := rgb(img, x, y)
		if c[0] == c[1] && c[1] == c[2] {
			continue
		}
		n := 1
		for x+n < b.Max.X && rgb(img, x+n, y) == c {
			n++
		}
		if n >= 15 {
			return c, true
		}
		x += n - 1
	}
	return [3]uint32{}, false
}

func saturation(c [3]uint32) uint32 {
	return max(c[0], c[1], c[2]) - min(c[0], c[1], c[2])
}

func rgb(img image.Image, x, y int) [3]uint32 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint32{r >> 8, g >> 8, b >> 8}
}

func nearColour(a, b [3]uint32) bool { return near(a[0], b[0]) && near(a[1], b[1]) && near(a[2], b[2]) }

func abs(v int) int { return max(v, -v) }

func picture(img image.Image) (colours, nonWhite, green int) {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := [3]uint32{r >> 8, g >> 8, bl >> 8}
			seen[c] = true
			if c != [3]uint32{255, 255, 255} {
				nonWhite++
			}
			if near(c[0], 0x2c) && near(c[1], 0xa0) && near(c[2], 0x2c) {
				green++
			}
		}
	}
	return len(seen), nonWhite, green
}

func near(v, want uint32) bool { return v+24 >= want && v <= want+24 }

// playProfile runs fleet f and plays plan on it, recorded by session s (started), and stops the
// session and then the fleet; the test fails if the fleet or the profile run fails.
// measuredFleet resolves prof's plan and makes its fleet (cfg with the plan's nodes) and a session
// that measures it on cp as fakelet run does (opts with cp's metrics sources and an admin client).
func measuredFleet(t *testing.T, cp *controlplane.ControlPlane, prof *profiles.Profile, cfg fleet.Config, opts measure.Options) (*profiles.Plan, *fleet.Fleet, *measure.Session) {
	t.Helper()
	plan, err := prof.Resolve(prof.Fleet())
	if err != nil {
		t.Fatal(err)
	}
	opts.Sources, err = source.ControlPlane(cp)
	if err != nil {
		t.Fatal(err)
	}
	opts.Client = admin(t, cp)
	s := measure.New(opts)
	cfg.Nodes = plan.Nodes
	f, err := fleet.New(fleettest.Resolve(t, cfg), cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.Observe(f)
	return plan, f, s
}

// playMeasured starts s on the fleet's Nodes, plays plan on f and returns the run's report, whose
// text it logs.
func playMeasured(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, s *measure.Session, plan *profiles.Plan, f *fleet.Fleet,
	params record.Parameters, description string, log io.Writer) *report.Report {
	t.Helper()
	prefix := f.Config().NamePrefix + "-"
	if err := s.Start(ctx, func(name string) bool { return strings.HasPrefix(name, prefix) }); err != nil {
		t.Fatal(err)
	}
	playProfile(t, ctx, s, plan, f, log)
	rec := s.Record(plan.Profile.Metadata.Name, params, record.Versions{Fakelet: "e2e"},
		record.Target{Server: cp.APIServerURL, Description: cp.APIServerURL + " (" + description + ")", Local: true})
	r := report.Build(rec)
	var text strings.Builder
	_ = r.WriteText(&text)
	t.Logf("\n%s", text.String())
	return r
}

func playProfile(t *testing.T, ctx context.Context, s *measure.Session, plan *profiles.Plan, f *fleet.Fleet, log io.Writer) {
	t.Helper()
	onPhase, onApplied := s.Hooks(plan, f)
	runner, err := scenario.New(scenario.Config{Plan: plan, Fleet: f, OnPhase: onPhase, OnApplied: onApplied, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	rf := runInBackground(t, f)
	runErr := runner.Run(ctx)
	s.UsePhases(measure.ScenarioPhases(runner.Record()))
	s.Stop()
	if err := rf.stop(); err != nil {
		t.Errorf("fleet: %v", err)
	}
	if runErr != nil {
		t.Fatalf("profile run: %v", runErr)
	}
}
