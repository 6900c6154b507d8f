package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"fakelet.dev/fakelet/measure/record"
)

// WriteText writes the summary table a run prints at its end.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := r.Parameters
	name := r.Profile
	if name == "" {
		name = "(no profile)"
	}
	if r.GeneratorBound {
		fmt.Fprintf(tw, "%s\n", r.generatorWarning())
	}
	if r.Capacity != nil {
		_ = tw.Flush()
		r.Capacity.write(w)
		for _, warning := range r.capacityWarnings() {
			fmt.Fprintln(w, warning)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(tw, "fakelet report: %s, %d nodes, %s heartbeats, %s\n", name, p.Nodes, p.Mode, r.End.Sub(r.Start).Round(time.Second))
	if p.Footprint != "" {
		fmt.Fprintf(tw, "  footprint\t%s\n", p.Footprint)
	}
	if p.Connections != "" {
		fmt.Fprintf(tw, "  connections\t%s, identity by %s\n", p.Connections, p.ConnectionIdentity)
	}
	fmt.Fprintf(tw, "  target\t%s\n", r.Target.Description)
	fmt.Fprintf(tw, "  versions\tfakelet %s, %s, server %s\n", r.Versions.Fakelet, r.Versions.Go, orDash(r.Versions.Server))
	fmt.Fprintf(tw, "  phases\t%s\n", r.phaseLine())
	fmt.Fprintf(tw, "  nodes at the end\t%s\n", r.endCounts())
	if src := r.Source; src != nil {
		fmt.Fprintf(tw, "  source\tPrometheus %s, %s to %s, step %s, phases from %s\n", src.Prometheus,
			src.From.UTC().Format(time.RFC3339), src.To.UTC().Format(time.RFC3339), src.Step, src.Phases)
	}
	_ = tw.Flush()
	if r.Source != nil {
		for _, n := range r.Source.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		writePromReactions(w, r.Source)
	}
	if len(r.Reactions) > 0 {
		fmt.Fprintln(w)
		r.writeReactions(w)
	}
	if r.Workloads != nil {
		fmt.Fprintln(w)
		r.writeWorkloads(w)
	}
	if r.Source == nil {
		fmt.Fprintln(w)
		r.writeFalseAlarms(w)
	}
	r.writeStorms(w)
	fmt.Fprintln(w)
	r.writeLoad(w)
	r.writeWatches(w)
	for _, e := range r.Load.ScrapeErrors {
		fmt.Fprintf(w, "  scrape failed: %s\n", e)
	}
	return nil
}

// generatorWarning says that fakelet's own lag, not the control plane, bounded the run.
func (r *Report) generatorWarning() string {
	return fmt.Sprintf("WARNING: fakelet's own send lag p99 was %.1f s (over %.0f s): the generator, not the control plane, was the bottleneck of this run",
		r.Load.Run.SendLag.P99, GeneratorBoundLag)
}

// writeFalseAlarms prints the false alarms by phase, group and event, with their causes.
func (r *Report) writeFalseAlarms(w io.Writer) {
	total := 0
	for _, c := range r.FalseAlarms {
		total += c.Count
	}
	if total == 0 {
		fmt.Fprintln(w, "false alarms: none (no node fakelet kept healthy turned Unknown or False, was tainted not-ready or unreachable, or lost a pod to eviction)")
		return
	}
	fmt.Fprintf(w, "false alarms: %d on nodes fakelet kept healthy, by cause in the grace period before each\n", total)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  phase\tgroup\tevent\tcount\tsend lag\tserver latency\trejection\tnone\tnodes\n")
	for _, c := range r.FalseAlarms {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", c.Phase, orDash(c.Group), c.Event, c.Count,
			c.SendLag, c.ServerLatency, c.Rejection, c.None, strings.Join(c.Nodes, ", "))
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *Report) phaseLine() string {
	var parts []string
	for _, ph := range r.Phases {
		parts = append(parts, fmt.Sprintf("%s %s", ph.Name, ph.End.Sub(ph.Start).Round(time.Second)))
	}
	return strings.Join(parts, ", ")
}

func (r *Report) endCounts() string {
	if len(r.Nodes.Timeline) == 0 {
		return "-"
	}
	last := r.Nodes.Timeline[len(r.Nodes.Timeline)-1]
	return fmt.Sprintf("%d Ready, %d NotReady, %d Unknown", last.Ready, last.NotReady, last.Unknown)
}

// writeReactions prints one line per summary: how many reacted and the latencies in seconds.
func (r *Report) writeReactions(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "reactions (seconds; from the action, and from the last heartbeat before a stop)")
	var texts [4]int // widths of the text columns, padded so that they read left-aligned
	for _, s := range r.Reactions {
		for i, v := range []string{s.Phase, s.Group, s.Op, s.Event} {
			texts[i] = max(texts[i], len(v), len([]string{"phase", "group", "op", "event"}[i]))
		}
	}
	pad := func(i int, s string) string { return fmt.Sprintf("%-*s", texts[i], s) }
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\treacted\tmissing\tmin\tp50\tp90\tp99\tmax\t\tlast-hb p50\tp99\tmax\t\n", pad(0, "phase"), pad(1, "group"), pad(2, "op"), pad(3, "event"))
	for _, s := range r.Reactions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t", pad(0, s.Phase), pad(1, s.Group), pad(2, s.Op), pad(3, s.Event), s.Reacted, s.Actions, s.Missing)
		if s.Reacted > 0 {
			a := s.FromAction
			fmt.Fprintf(tw, "%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\t", a.Min, a.P50, a.P90, a.P99, a.Max)
		} else {
			fmt.Fprintf(tw, "-\t-\t-\t-\t-\t\t")
		}
		if l := s.FromLastRenewal; l != nil {
			fmt.Fprintf(tw, "%.1f\t%.1f\t%.1f\t\n", l.P50, l.P99, l.Max)
		} else {
			fmt.Fprintf(tw, "-\t-\t-\t\n")
		}
	}
	_ = tw.Flush()
	for _, s := range r.Reactions {
		if s.Missing == 0 {
			continue
		}
		more := ""
		if n := s.Missing - len(s.MissingNodes); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		fmt.Fprintf(w, "  never within %s: %s of %s %s on %s%s\n", s.Phase, s.Event, s.Group, s.Op, strings.Join(s.MissingNodes, ", "), more)
	}
	for _, s := range r.Reactions {
		if s.SamplesOf > 0 {
			fmt.Fprintf(w, "  sampled in %s: %s of %s %s: %d latencies, %d of them kept (a uniform sample); counts, min and max are of all, percentiles of the sample\n",
				s.Phase, s.Event, s.Group, s.Op, s.SamplesOf, len(s.Samples))
		}
	}
}

// writeLoad prints LoadRows with a column per phase and one for the whole run.
func (r *Report) writeLoad(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "load")
	cols := append(r.Load.Phases[:len(r.Load.Phases):len(r.Load.Phases)], r.Load.Run)
	if len(r.Load.Phases) == 1 {
		cols = cols[1:] // one phase is the run
	}
	width := 0
	for _, row := range LoadRows {
		width = max(width, len(row.Label))
	}
	fmt.Fprintf(tw, "%*s\t", width, "")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t", c.Name)
	}
	fmt.Fprintln(tw)
	for _, row := range LoadRows {
		fmt.Fprintf(tw, "%-*s\t", width, row.Label)
		for _, c := range cols {
			if v, ok := row.Value(c); ok {
				fmt.Fprintf(tw, "%s\t", row.Format(v))
			} else {
				fmt.Fprintf(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

// writeWatches prints the agents' own watches over the run, when they held any (kubelet footprint).
func (r *Report) writeWatches(w io.Writer) {
	ws := r.Load.Run.FleetWatches
	if len(ws) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "the agents' watches over the run")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "resource\tmost held\tstreaming lists\twatches resumed\tevents received\tevents/s\t\n")
	var held, lists, watches, events, rate float64
	for _, x := range ws {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t\n", x.Resource, x.Held, x.Lists, x.Watches, x.Events, x.EventsRate)
		held, lists, watches, events, rate = held+x.Held, lists+x.Lists, watches+x.Watches, events+x.Events, rate+x.EventsRate
	}
	fmt.Fprintf(tw, "all\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t\n", held, lists, watches, events, rate)
	_ = tw.Flush()
	if n := r.Parameters.Nodes; n > 0 {
		fmt.Fprintf(w, "  per node: %.1f watches held, %.1f streaming lists\n", held/float64(n), lists/float64(n))
	}
}

// writePromReactions prints what Prometheus holds of the actions and reactions.
func writePromReactions(w io.Writer, s *record.Source) {
	if len(s.Actions)+len(s.Reactions)+len(s.Missed) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "reactions from Prometheus (seconds, estimated from histogram buckets; no per-node detail)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, a := range s.Actions {
		fmt.Fprintf(tw, "  %s\t%s\t%s applied\t%.0f\n", a.Phase, a.Group, a.Op, a.Count)
	}
	if len(s.Reactions) > 0 {
		fmt.Fprintf(tw, "  phase\tgroup\tevent\tfrom\tcount\tp50\tp90\tp99\n")
	}
	for _, r := range s.Reactions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.0f\t%.1f\t%.1f\t%.1f\n", r.Phase, r.Group, r.Event, r.From, r.Count, r.P50, r.P90, r.P99)
	}
	_ = tw.Flush()
	for _, m := range s.Missed {
		fmt.Fprintf(w, "  never came (over the run): %s of %s, %.0f\n", m.Event, m.Group, m.Count)
	}
}
