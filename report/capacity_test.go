package report

import (
	"bytes"
	"strings"
	"testing"

	"fakelet.dev/fakelet/measure/load"
)

// capacityFixture is a capacity run of two steps on the fixture's record: 1000 nodes held, 2000
// broke the APF level with 12 rejections.
func capacityFixture() *Report {
	procs := func(cores float64) []load.Process {
		return []load.Process{{Component: load.APIServer, CPUCores: cores, MaxMemoryBytes: 512 << 20},
			{Component: load.Etcd, CPUCores: cores / 2, MaxMemoryBytes: 128 << 20}}
	}
	levels := func(rejected float64) []Level {
		return []Level{
			{Level: "false-alarms", Value: 0, Limit: 0},
			{Level: "mutating-p99", Value: 0.2, Limit: 1, Unit: "s"},
			{Level: "apf-rejections", Value: rejected, Limit: 0, Broken: rejected > 0},
		}
	}
	broke := levels(12)[2]
	r := build(fixture())
	r.Capacity = &Capacity{Start: 1000, Step: 1000, Max: 5000, Settle: "1m0s", Hold: "2m0s", Held: 1000, Broke: &broke,
		Steps: []CapacityStep{
			{Nodes: 1000, From: at(60), To: at(180), Levels: levels(0), Processes: procs(0.5)},
			{Nodes: 2000, From: at(180), To: at(240), Levels: levels(12), Processes: procs(1.5)},
		}}
	return r
}

func TestCapacityAnswerLeadsTheSummaryAndThePage(t *testing.T) {
	r := capacityFixture()
	const answer = "held 1000 nodes; 2000 broke apf-rejections 12 against at most 0 (over 0)"
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(text.String(), "\n")
	if first != "capacity: "+answer {
		t.Errorf("summary begins %q, want the answer", first)
	}
	if !strings.Contains(text.String(), "12 !") {
		t.Errorf("the broken value is not marked:\n%s", text.String())
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{answer, "false-alarms against fleet size", "mutating-p99 against fleet size",
		"apf-rejections against fleet size", "Control plane CPU per step", "Control plane memory per step"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if i, j := strings.Index(html, "apf-rejections against fleet size"), strings.Index(html, "Nodes by Ready status"); i > j {
		t.Error("the capacity charts do not come first")
	}
}

func TestCapacityLevelsInPerfData(t *testing.T) {
	items := 0
	for _, it := range capacityFixture().PerfData().DataItems {
		if it.Labels["Metric"] != "Capacity" {
			continue
		}
		items++
		if it.Labels["Nodes"] == "2000" && it.Labels["Level"] == "apf-rejections" &&
			(it.Data["Value"] != 12 || it.Data["Limit"] != 0 || it.Labels["Broken"] != "true") {
			t.Errorf("the broken level's item %+v", it)
		}
	}
	if items != 6 {
		t.Errorf("%d capacity items, want 2 steps of 3 levels", items)
	}
}

func TestACapacityStepBoundByTheGeneratorIsSaid(t *testing.T) {
	r := capacityFixture()
	r.Load.Phases = append(r.Load.Phases, load.Phase{Name: HoldPhase(2000), SendLag: &load.SendLag{Ticks: 100, P50: 0.5, P99: 2.5}})
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	const want = "WARNING: fakelet's own send lag p99 was 2.5 s in the hold of 2000 nodes (over 1 s): that step measured the generator, not the control plane"
	if !strings.Contains(text.String(), want) {
		t.Errorf("summary lacks the warning:\n%s", text.String())
	}
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "that step measured the generator") {
		t.Error("report.html lacks the warning")
	}
	if strings.Count(text.String(), "WARNING") != 1 {
		t.Errorf("a step within its send lag is warned about too:\n%s", text.String())
	}
}
