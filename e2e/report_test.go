package e2e

import (
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/measure"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/scrape"
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
  description: Stop three of twelve nodes for 45 s and bring them back.
spec:
  nodes: 12
  groups:
    victims: {count: 3}
  phases:
  - name: steady
    duration: 10s
  - name: outage
    duration: 45s
    actions:
    - {group: victims, do: stop}
  - name: recovery
    duration: 20s
    actions:
    - {group: victims, do: start}
`

// TestReportOfAStopAndAStart runs a profile with the real runner and measures it as fakelet run
// does: the victims turn Unknown between the grace period and one monitor period (plus 2 s) after
// their last heartbeat, are Ready within seconds of their start, and the report renders.
func TestReportOfAStopAndAStart(t *testing.T) {
	cp := controlPlane(t)
	prof, err := profiles.Parse("e2e-report.yaml", []byte(stopAndStart))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := prof.Resolve(prof.Fleet())
	if err != nil {
		t.Fatal(err)
	}
	sources, err := scrape.ControlPlaneSources(cp)
	if err != nil {
		t.Fatal(err)
	}
	s := measure.New(measure.Options{Sources: sources, ScrapeInterval: 5 * time.Second, Client: admin(t, cp), WatchLeases: true})
	cfg := fleet.Config{Nodes: plan.Nodes, Fleet: "report", NamePrefix: "report", RegisterQPS: 50,
		Zones: 1, ZoneOf: profiles.ZoneOf}
	f, err := fleet.New(cfg, cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.Observe(f)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := s.Start(ctx, func(name string) bool { return strings.HasPrefix(name, "report-") }); err != nil {
		t.Fatal(err)
	}
	playProfile(t, ctx, s, plan, f, nil)
	r := report.Build(s.Record(prof.Metadata.Name, report.Parameters{Nodes: plan.Nodes, Mode: "lease"}, report.Versions{Fakelet: "e2e"},
		report.Target{Server: cp.APIServerURL, Description: cp.APIServerURL + " (e2e)", Local: true}))
	var text strings.Builder
	_ = r.WriteText(&text)
	t.Logf("\n%s", text.String())

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
}

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
func playProfile(t *testing.T, ctx context.Context, s *measure.Session, plan *profiles.Plan, f *fleet.Fleet, log io.Writer) {
	t.Helper()
	onPhase, onApplied := s.Hooks(plan, f)
	runner, err := scenario.New(scenario.Config{Plan: plan, Fleet: f, OnPhase: onPhase, OnApplied: onApplied, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	fleetCtx, stopFleet := context.WithCancel(ctx)
	fleetDone := make(chan error, 1)
	go func() { fleetDone <- f.Run(fleetCtx) }()
	runErr := runner.Run(ctx)
	s.UsePhases(measure.ScenarioPhases(runner.Record()))
	s.Stop()
	stopFleet()
	if err := <-fleetDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("fleet: %v", err)
	}
	if runErr != nil {
		t.Fatalf("profile run: %v", runErr)
	}
}
