package report

import (
	"bytes"
	"strings"
	"testing"

	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/workload"
)

// fixtureWorkloads is the fixture's Deployment of ten pods, one a node: the two victims' pods not
// Ready, one evicted and replaced on another node, the other Ready again in place.
func fixtureWorkloads() *workload.Summary {
	stats := func(p50, p90, p99, max float64) reaction.Stats {
		return reaction.Stats{Count: 11, Min: p50 / 2, P50: p50, P90: p90, P99: p99, Max: max}
	}
	return &workload.Summary{
		Namespace: "fakelet-fakelet-20260301-100000-abcdef", Pods: 11,
		Startup: workload.StartupLatency{Pods: 11, Latency: map[string]reaction.Stats{
			workload.CreateToSchedule: stats(0.01, 0.02, 0.03, 0.03),
			workload.ScheduleToRun:    stats(0.4, 0.9, 1, 1),
			workload.RunToWatch:       stats(0.3, 0.6, 0.7, 0.7),
			workload.ScheduleToWatch:  stats(0.8, 1.2, 1.3, 1.3),
			workload.PodStartup:       stats(0.9, 1.4, 1.5, 1.5),
		}},
		Throughput: []workload.Throughput{{Phase: "steady", Scheduled: 10, Perc50: 10, Perc90: 10, Perc99: 10, Max: 10},
			{Phase: "outage", Scheduled: 1, Perc50: 1, Perc90: 1, Perc99: 1, Max: 1}},
		Reactions: []workload.Reaction{{Phase: "outage", Group: "victims", Op: "stop", Nodes: 2, Pods: 2, Running: 11, Lost: 0, Steps: []workload.Step{
			{Name: workload.StepNotReady, Count: 2, First: 21, Median: 21, Last: 23},
			{Name: workload.StepEndpointNotReady, Count: 2, First: 21.2, Median: 21.2, Last: 23.1},
			{Name: workload.StepEvicted, Count: 1, First: 61, Median: 61, Last: 61},
			{Name: workload.StepReplacementCreated, Count: 1, First: 61.1, Median: 61.1, Last: 61.1},
			{Name: workload.StepScheduledElsewhere, Count: 1, First: 61.2, Median: 61.2, Last: 61.2},
			{Name: workload.StepReplacementRunning, Count: 1, First: 62.3, Median: 62.3, Last: 62.3},
			{Name: workload.StepReplacementReady, Count: 1, First: 62.3, Median: 62.3, Last: 62.3},
			{Name: workload.StepReadyInPlace, Count: 1, First: 123, Median: 123, Last: 123},
			{Name: workload.StepDeploymentAvailable, Count: 1, First: 62.4, Median: 62.4, Last: 62.4},
		}}},
	}
}

func TestWorkloadsInThePageAndPerfData(t *testing.T) {
	r := build(fixture())
	var page bytes.Buffer
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Workloads</h2>", "<td class=\"l\">pod_startup</td><td>0.90</td><td>1.40</td><td>1.50</td><td>1.50</td>",
		"<h3>outage: stop on victims</h3>", "<td class=\"l\">deploymentAvailable</td><td>1</td><td>62.4</td>"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("report.html has no %q", want)
		}
	}
	items := map[string]DataItem{}
	for _, it := range r.PerfData().DataItems {
		switch it.Labels["Metric"] {
		case workload.PodStartup, "SchedulingThroughput", "WorkloadReaction":
			items[it.Labels["Metric"]+"/"+it.Labels["Phase"]+"/"+it.Labels["Step"]] = it
		}
	}
	if it := items["pod_startup//"]; it.Labels["Measurement"] != "PodStartupLatency" || it.Unit != "ms" || it.Data["Perc99"] != 1500 {
		t.Errorf("pod_startup item = %+v", it)
	}
	if it := items["SchedulingThroughput/steady/"]; it.Data["Max"] != 10 || it.Unit != "1/s" {
		t.Errorf("throughput item = %+v", it)
	}
	if it := items["WorkloadReaction/outage/evicted"]; it.Data["Median"] != 61000 || it.Labels["Group"] != "victims" {
		t.Errorf("evicted item = %+v", it)
	}
}

// An op that reached no pod of workloads that had none Running is no outage ridden out: the summary
// says there was nothing to follow rather than read as "0 pods lost for good" alone.
func TestWorkloadsThatNeverRanAreSaidToHaveNoneRunning(t *testing.T) {
	r := &Report{}
	r.Workloads = &workload.Summary{Namespace: "ns", Pods: 78, Reactions: []workload.Reaction{
		{Phase: "outage", Group: "stopped", Op: "stop", Nodes: 100},
	}}
	var b bytes.Buffer
	r.writeWorkloads(&b)
	if !strings.Contains(b.String(), "0 pods of the workloads Running") || !strings.Contains(b.String(), "no workload to follow") {
		t.Errorf("summary:\n%s\nwant it to say no pod of the workloads was Running", b.String())
	}
}
