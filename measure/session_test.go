package measure

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"fakelet.dev/fakelet/reaction"
	"fakelet.dev/fakelet/report"
	"fakelet.dev/fakelet/scrape"
)

// countingSource is a component whose one counter counts its scrapes.
type countingSource struct{ n atomic.Int64 }

func (c *countingSource) Component() string { return "kube-apiserver" }
func (c *countingSource) Scrape(context.Context) (map[string]*scrape.Family, error) {
	v := float64(c.n.Add(1))
	return map[string]*scrape.Family{"process_cpu_seconds_total": {Type: scrape.Counter, Series: map[string]*scrape.Series{"": {Value: v}}}}, nil
}

func TestSessionScrapesAtStartBoundariesAndStop(t *testing.T) {
	src := &countingSource{}
	s := New(Options{Sources: []scrape.Source{src}, ScrapeInterval: time.Hour})
	if err := s.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	s.PhaseBegan("steady", t1)
	s.Applied(reaction.Action{Phase: "steady", Group: "g", Op: "stop", Node: "n0", At: t1})
	t2 := t1.Add(time.Millisecond)
	s.PhaseBegan("outage", t2)
	s.Stop()
	s.Stop() // once is enough; twice is harmless
	rec := s.Record("p", report.Parameters{}, report.Versions{}, report.Target{})
	// At the start, at the two boundaries and at the stop; the hour-long interval never came.
	if got := src.n.Load(); got != 4 {
		t.Errorf("%d scrapes of the control plane, want 4", got)
	}
	if len(rec.Snapshots) != 8 { // each with the fleet's own
		t.Errorf("%d snapshots, want 8", len(rec.Snapshots))
	}
	if len(rec.Phases) != 2 || !rec.Phases[0].End.Equal(t2) || !rec.Phases[1].End.Equal(rec.End) {
		t.Errorf("phases %+v: want steady to end when outage began, and outage at the end", rec.Phases)
	}
	if len(rec.Actions) != 1 || rec.Profile != "p" || rec.Start.IsZero() || rec.End.Before(rec.Start) {
		t.Errorf("record %+v", rec)
	}
}
