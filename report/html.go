package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

// htmlPage is the report page: no scripts, no links, no fonts or images from anywhere, so the file
// reads the same offline and in ten years.
var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>fakelet report: {{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #eee; white-space: nowrap; }
th:first-child, td:first-child, td.l, th.l { text-align: left; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 1em; font-size: 0.9em; }
dt { font-weight: bold; }
.chart svg { width: 100%; height: auto; }
.missing { color: #b00; }
td.sub { padding-left: 2em; }
th.group { text-align: center; border-bottom: 1px solid #ccc; }
</style>
</head>
<body>
<h1>fakelet report: {{.Title}}</h1>
{{if .R.GeneratorBound}}<p class="missing"><strong>{{.GeneratorWarning}}</strong></p>
{{end}}{{with .R.Capacity}}<h2>Capacity</h2>
<p><strong>{{.Answer}}</strong></p>
{{range $.CapacityWarnings}}<p class="missing"><strong>{{.}}</strong></p>
{{end}}
<p>Steps of {{.Step}} from {{.Start}} to {{.Max}} nodes, each settling {{.Settle}} and held {{.Hold}}; each level over the hold, against its limit.</p>
<table>
<tr><th>nodes</th><th class="l">level</th><th>value</th><th>limit</th><th class="l"></th></tr>
{{range $s := .Steps}}{{range .Levels}}<tr><td>{{$s.Nodes}}</td><td class="l">{{.Level}}</td><td>{{printf "%.3g" .Value}}{{with .Unit}} {{.}}{{end}}</td><td>{{printf "%.3g" .Limit}}</td><td class="l{{if .Broken}} missing{{end}}">{{if .Broken}}broken{{else}}held{{end}}</td></tr>
{{end}}{{end}}</table>
{{end}}<dl>
<dt>target</dt><dd>{{.R.Target.Description}}</dd>
<dt>nodes</dt><dd>{{.R.Parameters.Nodes}}, {{.R.Parameters.Mode}} heartbeats, identity {{.R.Parameters.Identity}}{{with .R.Parameters.Footprint}}, {{.}} footprint{{end}}{{with .R.Parameters.Connections}}, {{.}} connections (identity by {{$.R.Parameters.ConnectionIdentity}}){{end}}</dd>
<dt>run</dt><dd>{{.Start}}, {{.Duration}}</dd>
<dt>phases</dt><dd>{{.Phases}}</dd>
<dt>versions</dt><dd>fakelet {{.R.Versions.Fakelet}}, {{.R.Versions.Go}}, server {{.R.Versions.Server}}</dd>
{{with .R.Source}}<dt>source</dt><dd>Prometheus {{.Prometheus}}, {{.From.UTC.Format "2006-01-02T15:04:05Z07:00"}} to {{.To.UTC.Format "2006-01-02T15:04:05Z07:00"}}, step {{.Step}}, phases from {{.Phases}}</dd>{{end}}
</dl>
{{with .R.Source}}{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{if or .Actions .Reactions .Missed}}<h2>Reactions from Prometheus</h2>
<p>Counts by phase; seconds estimated from the histogram's buckets; no node is named.</p>
{{if .Actions}}<table>
<tr><th>phase</th><th class="l">group</th><th class="l">op</th><th>applied</th></tr>
{{range .Actions}}<tr><td>{{.Phase}}</td><td class="l">{{.Group}}</td><td class="l">{{.Op}}</td><td>{{printf "%.0f" .Count}}</td></tr>
{{end}}</table>{{end}}
{{if .Reactions}}<table>
<tr><th>phase</th><th class="l">group</th><th class="l">event</th><th class="l">from</th><th>count</th><th>p50</th><th>p90</th><th>p99</th></tr>
{{range .Reactions}}<tr><td>{{.Phase}}</td><td class="l">{{.Group}}</td><td class="l">{{.Event}}</td><td class="l">{{.From}}</td><td>{{printf "%.0f" .Count}}</td><td>{{printf "%.1f" .P50}}</td><td>{{printf "%.1f" .P90}}</td><td>{{printf "%.1f" .P99}}</td></tr>
{{end}}</table>{{end}}
{{range .Missed}}<p class="missing">never came (over the run): {{.Event}} of {{.Group}}, {{printf "%.0f" .Count}}</p>
{{end}}{{end}}{{end}}{{range .Charts}}<h2>{{.Title}}</h2>
<div class="chart">{{.SVG}}</div>
{{end}}
{{if .R.Reactions}}<h2>Reactions</h2>
<p>Seconds from the action, and from the node's last heartbeat before a stop, partition or denyAuth.</p>
<table>
<tr><th colspan="6"></th><th class="group" colspan="5">seconds from the action</th><th class="group" colspan="3">from the last heartbeat</th></tr>
<tr><th>phase</th><th class="l">group</th><th class="l">op</th><th class="l">event</th><th>reacted</th><th>missing</th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>max</th><th>p50</th><th>p99</th><th>max</th></tr>
{{range .R.Reactions}}<tr><td>{{.Phase}}</td><td class="l">{{.Group}}</td><td class="l">{{.Op}}</td><td class="l">{{.Event}}</td><td>{{.Reacted}}/{{.Actions}}</td><td{{if .Missing}} class="missing"{{end}}>{{.Missing}}</td>
{{if .Reacted}}<td>{{printf "%.1f" .FromAction.Min}}</td><td>{{printf "%.1f" .FromAction.P50}}</td><td>{{printf "%.1f" .FromAction.P90}}</td><td>{{printf "%.1f" .FromAction.P99}}</td><td>{{printf "%.1f" .FromAction.Max}}</td>{{else}}<td>-</td><td>-</td><td>-</td><td>-</td><td>-</td>{{end}}
{{with .FromLastRenewal}}<td>{{printf "%.1f" .P50}}</td><td>{{printf "%.1f" .P99}}</td><td>{{printf "%.1f" .Max}}</td>{{else}}<td>-</td><td>-</td><td>-</td>{{end}}</tr>
{{end}}</table>
{{range .R.Reactions}}{{if .Missing}}<p class="missing">never within {{.Phase}}: {{.Event}} of {{.Group}} {{.Op}} on {{range $i, $n := .MissingNodes}}{{if $i}}, {{end}}{{$n}}{{end}}{{if gt .Missing (len .MissingNodes)}} and more ({{.Missing}} in all){{end}}</p>
{{end}}{{end}}{{end}}
{{template "workloads" .}}
{{if not .R.Source}}<h2>False alarms</h2>
{{if .R.FalseAlarms}}<p>Alarms on nodes fakelet kept healthy (no op of the profile had broken them, nor restored them less than a grace period before), by what the node's requests in the grace period before each show.</p>
<table>
<tr><th>phase</th><th class="l">group</th><th class="l">event</th><th>count</th><th>send lag</th><th>server latency</th><th>rejection</th><th>none</th><th class="l">nodes</th></tr>
{{range .R.FalseAlarms}}<tr><td>{{.Phase}}</td><td class="l">{{or .Group "-"}}</td><td class="l">{{.Event}}</td><td class="missing">{{.Count}}</td><td>{{.SendLag}}</td><td>{{.ServerLatency}}</td><td>{{.Rejection}}</td><td>{{.None}}</td><td class="l">{{range $i, $n := .Nodes}}{{if $i}}, {{end}}{{$n}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>None: no node fakelet kept healthy turned Unknown or False, was tainted not-ready or unreachable, or lost a pod to eviction.</p>{{end}}
{{end}}
{{if .Storms}}<h2>Storms</h2>
<p>Kubelets that fell behind together (restarted, or their watches broken by the server) and the fleet's requests until each was back: Ready, with every watch past its initial list.</p>
{{range .Storms}}<h3>{{.Title}}</h3>
<p>{{.Summary}}</p>
{{if .S.Requests}}<table>
<tr><th class="l">request</th><th>count</th><th>per second</th><th>peak per second</th><th>at</th></tr>
{{range .S.Requests}}<tr><td>{{.Verb}} {{.Resource}}</td><td>{{.Count}}</td><td>{{printf "%.1f" .Rate}}</td><td>{{.Peak}}</td><td>+{{.PeakSecond}}s</td></tr>
{{end}}</table>
<table>
<tr><th>second</th>{{range .Kinds}}<th>{{.}}</th>{{end}}<th>429s</th><th>nodes back</th></tr>
{{range .Seconds}}<tr><td>+{{.At}}s</td>{{range .Counts}}<td>{{.}}</td>{{end}}<td>{{.Throttled}}</td><td>{{.Recovered}}</td></tr>
{{end}}</table>{{if .More}}<p>and {{.More}} more seconds in report.json</p>{{end}}{{end}}
{{end}}{{end}}
<h2>Load</h2>
<table>
<tr><th></th>{{range .Cols}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td{{if .Sub}} class="sub"{{end}}>{{.Label}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{with .R.Load.Run.FleetWatches}}<h2>The agents' watches</h2>
<p>What the kubelet footprint's reflectors held and opened over the run, by resource.</p>
<table>
<tr><th class="l">resource</th><th>most held</th><th>streaming lists (relists included)</th><th>watches resumed</th><th>events received</th><th>events/s</th></tr>
{{range .}}<tr><td class="l">{{.Resource}}</td><td>{{printf "%.0f" .Held}}</td><td>{{printf "%.0f" .Lists}}</td><td>{{printf "%.0f" .Watches}}</td><td>{{printf "%.0f" .Events}}</td><td>{{printf "%.1f" .EventsRate}}</td></tr>
{{end}}</table>
{{end}}{{range .R.Load.ScrapeErrors}}<p class="missing">scrape failed: {{.}}</p>
{{end}}
</body>
</html>
`))

func init() { template.Must(htmlPage.New("workloads").Parse(htmlWorkloads)) }

func generatorWarningOf(r *Report) string {
	if !r.GeneratorBound {
		return ""
	}
	return r.generatorWarning()
}

type htmlRow struct {
	Label string
	Sub   bool // a part of the row above: indented, as the text table indents it
	Cells []string
}

// WriteHTML writes the report as one self-contained HTML page with its charts inline.
func (r *Report) WriteHTML(w io.Writer) error {
	charts, err := r.Charts()
	if err != nil {
		return err
	}
	var svgs []struct {
		Title string
		SVG   template.HTML
	}
	for _, c := range charts {
		svgs = append(svgs, struct {
			Title string
			SVG   template.HTML
		}{c.Title, template.HTML(c.SVG)}) // rendered by gonum/plot from numbers, not from input text
	}
	cols := append(r.Load.Phases[:len(r.Load.Phases):len(r.Load.Phases)], r.Load.Run)
	if len(r.Load.Phases) == 1 {
		cols = cols[1:]
	}
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	var rows []htmlRow
	for _, row := range LoadRows {
		label := strings.TrimLeft(row.Label, " ")
		hr := htmlRow{Label: label, Sub: label != row.Label}
		for _, c := range cols {
			if v, ok := row.Value(c); ok {
				hr.Cells = append(hr.Cells, row.Format(v))
			} else {
				hr.Cells = append(hr.Cells, "-")
			}
		}
		rows = append(rows, hr)
	}
	title := r.Profile
	if title == "" {
		title = fmt.Sprintf("%d nodes", r.Parameters.Nodes)
	}
	var buf bytes.Buffer
	err = htmlPage.Execute(&buf, map[string]any{
		"R": r, "Title": title, "Charts": svgs, "Cols": names, "Rows": rows,
		"Start": r.Start.UTC().Format(time.RFC3339), "Duration": r.End.Sub(r.Start).Round(time.Second).String(),
		"Phases": r.phaseLine(), "GeneratorWarning": generatorWarningOf(r), "CapacityWarnings": r.capacityWarnings(), "Storms": r.htmlStorms(),
		"WorkloadStartup": r.htmlWorkloadStartup(),
	})
	if err != nil {
		return fmt.Errorf("render report.html: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}
