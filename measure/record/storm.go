package record

import (
	"cmp"
	"maps"
	"slices"
	"strings"
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

// Storms turns recorded storms into a record's, each in the phase it began in, with the apiserver's
// rejections from the scrapes around it; nil for none.
func Storms(recorded []storm.Storm, phases []reaction.Phase, snaps []scrape.Snapshot) []Storm {
	if len(recorded) == 0 {
		return nil
	}
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
