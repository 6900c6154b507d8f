package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/measure/storm"
)

// Storm is one storm of the run (package storm): kubelets that fell behind together, as after a
// mass restart or an apiserver restart that broke their watches, what the fleet sent while they
// caught up, and how long they took.
type Storm struct {
	// Phase is the phase the storm began in.
	Phase string    `json:"phase"`
	Start time.Time `json:"start"`
	// End is when the last node caught up again; zero if some had not when the run ended.
	End time.Time `json:"end,omitzero"`
	// Causes counts the falls behind: "process" (a stop or restart), "watch" (a watch broken by
	// the server or the network).
	Causes map[string]int `json:"causes"`
	// Nodes fell behind, Recovered of them caught up again: reported Ready and held every watch past
	// its initial list.
	Nodes     int `json:"nodes"`
	Recovered int `json:"recovered"`
	// AllBackSeconds is from Start until every node that fell behind had caught up; absent if some
	// never did.
	AllBackSeconds *float64 `json:"allBackSeconds,omitempty"`
	// Requests are the fleet's requests during the storm by verb and resource, most first.
	Requests []StormRequests `json:"requests,omitempty"`
	// Throttled counts the fleet's requests answered 429 (API Priority and Fairness) in the storm.
	Throttled int `json:"throttled"`
	// APFRejected is apiserver_flowcontrol_rejected_requests_total's increase between the scrapes
	// around the storm (APFFrom, APFTo); absent without two such scrapes of the apiserver.
	APFRejected *float64  `json:"apfRejected,omitempty"`
	APFFrom     time.Time `json:"apfFrom,omitzero"`
	APFTo       time.Time `json:"apfTo,omitzero"`
	// Seconds are the fleet's requests second by second from Start's second (storm.MaxSeconds at
	// most).
	Seconds []storm.Second `json:"seconds,omitempty"`
}

// StormRequests is one kind of request in a storm.
type StormRequests struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Count    int    `json:"count"`
	// Peak is the most sent in one second, PeakSecond that second's offset from the storm's start.
	Peak       int `json:"peak"`
	PeakSecond int `json:"peakSecond"`
	// Rate is Count over the storm's seconds kept.
	Rate float64 `json:"rate"`
}

// buildStorms turns recorded storms into the report's, with the apiserver's rejections from the
// scrapes around each.
func buildStorms(recorded []storm.Storm, phases []reaction.Phase, snaps []scrape.Snapshot) []Storm {
	out := make([]Storm, 0, len(recorded))
	for _, s := range recorded {
		st := Storm{Start: s.Start, End: s.End, Causes: s.Causes, Nodes: s.Nodes, Recovered: s.Recovered, Seconds: s.Seconds}
		for _, ph := range phases {
			if !s.Start.Before(ph.Start) && s.Start.Before(ph.End) {
				st.Phase = ph.Name
			}
		}
		if !s.End.IsZero() {
			d := s.End.Sub(s.Start).Seconds()
			st.AllBackSeconds = &d
		}
		byKind := map[string]*StormRequests{}
		for i, sec := range s.Seconds {
			st.Throttled += sec.Throttled
			for kind, n := range sec.Requests {
				r := byKind[kind]
				if r == nil {
					verb, resource, _ := strings.Cut(kind, " ")
					r = &StormRequests{Verb: verb, Resource: resource}
					byKind[kind] = r
				}
				r.Count += n
				if n > r.Peak {
					r.Peak, r.PeakSecond = n, i
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(byKind)) {
			r := byKind[k]
			r.Rate = float64(r.Count) / float64(max(1, len(s.Seconds)))
			st.Requests = append(st.Requests, *r)
		}
		slices.SortStableFunc(st.Requests, func(a, b StormRequests) int { return cmp.Compare(b.Count, a.Count) })
		end := s.End
		if end.IsZero() && len(s.Seconds) > 0 {
			end = s.Start.Add(time.Duration(len(s.Seconds)) * time.Second)
		}
		if rej, from, to, ok := load.Rejected(snaps, s.Start, end); ok {
			st.APFRejected, st.APFFrom, st.APFTo = &rej, from, to
		}
		out = append(out, st)
	}
	return out
}

// writeStorms prints each storm: who fell behind, how long until all were back, the rejections and
// the fleet's requests by verb and resource.
func (r *Report) writeStorms(w io.Writer) {
	if len(r.Storms) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "storms (kubelets fallen behind together: restarted, or their watches broken; back once Ready with every watch listed)")
	for _, s := range r.Storms {
		fmt.Fprintf(w, "  %s +%s: %s\n", orDash(s.Phase), s.Start.Sub(r.phaseStart(s.Phase)).Round(time.Second), s.summary())
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
	S              Storm
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
		h := htmlStorm{S: s, Title: fmt.Sprintf("%s +%s", orDash(s.Phase), s.Start.Sub(r.phaseStart(s.Phase)).Round(time.Second)), Summary: s.summary()}
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

// summary is a storm's line: who fell behind, how long until all were back, the rejections.
func (s Storm) summary() string {
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
