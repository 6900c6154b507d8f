package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"fakelet.dev/fakelet/measure/workload"
)

// The workloads' section: their pods' startup latency, the scheduler's throughput, and their
// reactions to the ops that broke nodes (package workload), in the summary, report.html and
// perfdata.json.

// writeWorkloads prints the workloads' section of the summary.
func (r *Report) writeWorkloads(w io.Writer) {
	wl := r.Workloads
	fmt.Fprintf(w, "workloads: %d pods in namespace %s", wl.Pods, wl.Namespace)
	if wl.PodsDropped > 0 {
		fmt.Fprintf(w, " (%d more not followed)", wl.PodsDropped)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	st := wl.Startup
	if st.Pods > 0 {
		fmt.Fprintf(tw, "  pod startup (s), %d pods\tp50\tp90\tp99\tmax\n", st.Pods)
		for _, t := range workload.Transitions {
			s := st.Latency[t]
			fmt.Fprintf(tw, "    %s\t%.2f\t%.2f\t%.2f\t%.2f\n", t, s.P50, s.P90, s.P99, s.Max)
		}
	} else {
		fmt.Fprintf(tw, "  pod startup\tno pod seen from creation to Running\n")
	}
	if st.Excluded > 0 {
		fmt.Fprintf(tw, "    (%d pods left out: created before the watch, or their image pull delayed)\n", st.Excluded)
	}
	_ = tw.Flush()
	if len(wl.Throughput) > 0 {
		fmt.Fprintf(tw, "  scheduled (pods/s)\tpods\tp50\tp90\tp99\tmax\n")
		for _, tp := range wl.Throughput {
			fmt.Fprintf(tw, "    %s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\n", tp.Phase, tp.Scheduled, tp.Perc50, tp.Perc90, tp.Perc99, tp.Max)
		}
	}
	_ = tw.Flush()
	for _, re := range wl.Reactions {
		fmt.Fprintf(w, "  %s: %s on %s (%s, %s on them, %s of the workloads Running): %s lost for good\n", re.Phase, re.Op, re.Group,
			count(re.Nodes, "node"), count(re.Pods, "pod"), count(re.Running, "pod"), count(re.Lost, "pod"))
		if re.Running == 0 {
			fmt.Fprintf(w, "    (no pod of the workloads was Running when the op began: there was no workload to follow)\n")
		}
		if len(re.Steps) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "    step (s from the op)\tcount\tfirst\tmedian\tlast\n")
		for _, s := range re.Steps {
			fmt.Fprintf(tw, "    %s\t%d\t%.1f\t%.1f\t%.1f\n", s.Name, s.Count, s.First, s.Median, s.Last)
		}
		_ = tw.Flush()
	}
}

// count is n of a noun: "1 node", "2 nodes".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// htmlStartupRow is one transition of the pod startup table.
type htmlStartupRow struct {
	Name               string
	P50, P90, P99, Max string
	Count              int
}

// htmlWorkloadStartup is the rows of report.html's pod startup table.
func (r *Report) htmlWorkloadStartup() []htmlStartupRow {
	if r.Workloads == nil || r.Workloads.Startup.Pods == 0 {
		return nil
	}
	var rows []htmlStartupRow
	for _, t := range workload.Transitions {
		s := r.Workloads.Startup.Latency[t]
		f := func(v float64) string { return fmt.Sprintf("%.2f", v) }
		rows = append(rows, htmlStartupRow{Name: t, P50: f(s.P50), P90: f(s.P90), P99: f(s.P99), Max: f(s.Max), Count: s.Count})
	}
	return rows
}

// htmlWorkloads is report.html's workloads' section.
const htmlWorkloads = `{{with .R.Workloads}}<h2>Workloads</h2>
<p>{{.Pods}} pods in namespace {{.Namespace}}{{if .PodsDropped}} ({{.PodsDropped}} more not followed){{end}}.</p>
{{if $.WorkloadStartup}}<p>Pod startup, seconds, over {{.Startup.Pods}} pods{{if .Startup.Excluded}} ({{.Startup.Excluded}} left out: created before the watch, or their image pull delayed){{end}}: clusterloader2's PodStartupLatency transitions.</p>
<table>
<tr><th class="l">transition</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
{{range $.WorkloadStartup}}<tr><td class="l">{{.Name}}</td><td>{{.P50}}</td><td>{{.P90}}</td><td>{{.P99}}</td><td>{{.Max}}</td></tr>
{{end}}</table>{{else}}<p>Pod startup: no pod seen from creation to Running.</p>{{end}}
{{if .Throughput}}<p>Pods the scheduler bound, per second of each phase (from its first such pod to its last).</p>
<table>
<tr><th class="l">phase</th><th>pods</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>
{{range .Throughput}}<tr><td class="l">{{.Phase}}</td><td>{{.Scheduled}}</td><td>{{printf "%.0f" .Perc50}}</td><td>{{printf "%.0f" .Perc90}}</td><td>{{printf "%.0f" .Perc99}}</td><td>{{printf "%.0f" .Max}}</td></tr>
{{end}}</table>{{end}}
{{range .Reactions}}<h3>{{.Phase}}: {{.Op}} on {{.Group}}</h3>
<p>{{.Nodes}} nodes, {{.Pods}} pods on them when the op reached them, {{.Running}} of the workloads' pods Running when it began; <span{{if .Lost}} class="missing"{{end}}>{{.Lost}} lost for good</span>. Seconds from the op.</p>
{{if .Steps}}<table>
<tr><th class="l">step</th><th>count</th><th>first</th><th>median</th><th>last</th></tr>
{{range .Steps}}<tr><td class="l">{{.Name}}</td><td>{{.Count}}</td><td>{{printf "%.1f" .First}}</td><td>{{printf "%.1f" .Median}}</td><td>{{printf "%.1f" .Last}}</td></tr>
{{end}}</table>{{end}}
{{end}}{{end}}`

// workloadPerfData is the workloads' part of perfdata.json: PodStartupLatency as clusterloader2
// writes it (one item per transition, labelled Metric=<transition>, in ms), SchedulingThroughput
// per phase (pods/s) and the reactions' steps (ms).
func (r *Report) workloadPerfData() []DataItem {
	wl := r.Workloads
	if wl == nil {
		return nil
	}
	var items []DataItem
	if wl.Startup.Pods > 0 {
		for _, t := range workload.Transitions {
			s := wl.Startup.Latency[t]
			items = append(items, DataItem{
				Data: map[string]float64{"Perc50": s.P50 * 1000, "Perc90": s.P90 * 1000, "Perc99": s.P99 * 1000},
				Unit: "ms", Labels: map[string]string{"Metric": t, "Measurement": "PodStartupLatency", "Count": fmt.Sprint(s.Count)},
			})
		}
	}
	for _, tp := range wl.Throughput {
		items = append(items, DataItem{
			Data: map[string]float64{"Perc50": tp.Perc50, "Perc90": tp.Perc90, "Perc99": tp.Perc99, "Max": tp.Max},
			Unit: "1/s", Labels: map[string]string{"Metric": "SchedulingThroughput", "Phase": tp.Phase, "Count": fmt.Sprint(tp.Scheduled)},
		})
	}
	for _, re := range wl.Reactions {
		for _, s := range re.Steps {
			items = append(items, DataItem{
				Data: map[string]float64{"First": s.First * 1000, "Median": s.Median * 1000, "Last": s.Last * 1000},
				Unit: "ms", Labels: map[string]string{"Metric": "WorkloadReaction", "Phase": re.Phase, "Group": re.Group, "Op": re.Op,
					"Step": s.Name, "Count": fmt.Sprint(s.Count)},
			})
		}
	}
	return items
}
