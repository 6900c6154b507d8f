package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/storm"
)

// writeStorms prints each storm: who fell behind, how long until all were back, the rejections and
// the fleet's requests by verb and resource.
func (r *Report) writeStorms(w io.Writer) {
	if len(r.Storms) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "storms (kubelets fallen behind together: restarted, or their watches broken; back once Ready with every watch listed)")
	for _, s := range r.Storms {
		fmt.Fprintf(w, "  %s +%s: %s\n", orDash(s.Phase), s.Start.Sub(r.phaseStart(s.Phase)).Round(time.Second), stormSummary(s))
		if len(s.Requests) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		width := len("request")
		for _, q := range s.Requests {
			width = max(width, len(q.Verb)+1+len(q.Resource))
		}
		fmt.Fprintf(tw, "    %-*s\tcount\tper second\tpeak per second\tat\t\n", width, "request")
		for _, q := range s.Requests {
			fmt.Fprintf(tw, "    %-*s\t%d\t%.1f\t%d\t+%ds\t\n", width, q.Verb+" "+q.Resource, q.Count, q.Rate, q.Peak, q.PeakSecond)
		}
		_ = tw.Flush()
	}
	if r.StormsDropped > 0 {
		fmt.Fprintf(w, "  and %d more storms, not kept (%d at most)\n", r.StormsDropped, storm.MaxStorms)
	}
}

func (r *Report) phaseStart(name string) time.Time {
	for _, ph := range r.Phases {
		if ph.Name == name {
			return ph.Start
		}
	}
	return r.Start
}

func causeList(c map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if c[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// htmlSecondsShown bounds the per-second table of a storm in report.html; report.json has them all.
const htmlSecondsShown = 60

type htmlStorm struct {
	Title, Summary string
	S              record.Storm
	Kinds          []string
	Seconds        []htmlSecond
	More           int
}

type htmlSecond struct {
	At                   int
	Counts               []int
	Throttled, Recovered int
}

// htmlStorms lays out the storms for report.html: a line each, and a table of the seconds with a
// column per kind of request, most sent first.
func (r *Report) htmlStorms() []htmlStorm {
	var out []htmlStorm
	for _, s := range r.Storms {
		h := htmlStorm{S: s, Title: fmt.Sprintf("%s +%s", orDash(s.Phase), s.Start.Sub(r.phaseStart(s.Phase)).Round(time.Second)), Summary: stormSummary(s)}
		for _, q := range s.Requests {
			h.Kinds = append(h.Kinds, q.Verb+" "+q.Resource)
		}
		for i, sec := range s.Seconds {
			if i == htmlSecondsShown {
				h.More = len(s.Seconds) - i
				break
			}
			hs := htmlSecond{At: i, Throttled: sec.Throttled, Recovered: sec.Recovered}
			for _, k := range h.Kinds {
				hs.Counts = append(hs.Counts, sec.Requests[k])
			}
			h.Seconds = append(h.Seconds, hs)
		}
		out = append(out, h)
	}
	return out
}

// stormSummary is a storm's line: who fell behind, how long until all were back, the rejections.
func stormSummary(s record.Storm) string {
	back := fmt.Sprintf("%d of %d not back by the end", s.Nodes-s.Recovered, s.Nodes)
	if s.AllBackSeconds != nil {
		back = fmt.Sprintf("all back after %.1f s", *s.AllBackSeconds)
	}
	apf := "APF rejections not scraped"
	if s.APFRejected != nil {
		apf = fmt.Sprintf("APF rejections %.0f (between the scrapes at %s and %s)", *s.APFRejected,
			s.APFFrom.UTC().Format(time.TimeOnly), s.APFTo.UTC().Format(time.TimeOnly))
	}
	return fmt.Sprintf("%d nodes (%s), %s; 429s to the fleet %d, %s", s.Nodes, causeList(s.Causes), back, s.Throttled, apf)
}
