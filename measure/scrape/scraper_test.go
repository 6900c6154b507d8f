package scrape

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

type countSource struct{ n int }

func (c *countSource) Component() string { return "kube-apiserver" }
func (c *countSource) Scrape(context.Context) (map[string]*Family, error) {
	c.n++
	return map[string]*Family{"n": {Type: Counter, Series: map[string]*Series{"": {Value: float64(c.n)}}}}, nil
}

// TestScraperKeepsBoundedIntervalSnapshots: six hours of scrapes every second keep at most
// maxIntervalRounds from the interval, spread over the whole run, and every scrape asked for (the
// phase boundaries).
func TestScraperKeepsBoundedIntervalSnapshots(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	s := NewScraper([]Source{&countSource{}}, time.Second, clk)
	ctx := context.Background()
	const seconds = 6 * 3600
	var boundaries []time.Time
	for sec := range seconds {
		now := t0.Add(time.Duration(sec) * time.Second)
		clk.SetTime(now)
		if sec%1800 == 0 {
			s.Scrape(ctx)
			boundaries = append(boundaries, now)
			continue
		}
		s.tick(ctx)
	}
	snaps := s.Snapshots()
	if len(snaps) > maxIntervalRounds+len(boundaries) {
		t.Fatalf("%d snapshots kept of %d scrapes, want at most %d", len(snaps), seconds, maxIntervalRounds+len(boundaries))
	}
	seen := map[time.Time]bool{}
	var widest time.Duration
	for i, sn := range snaps {
		seen[sn.At] = true
		if i > 0 {
			if sn.At.Before(snaps[i-1].At) {
				t.Fatalf("snapshot %d at %v before %v", i, sn.At, snaps[i-1].At)
			}
			widest = max(widest, sn.At.Sub(snaps[i-1].At))
		}
	}
	for _, b := range boundaries {
		if !seen[b] {
			t.Errorf("the boundary scrape at %v was dropped", b)
		}
	}
	if last := snaps[len(snaps)-1].At; last.Before(t0.Add(seconds*time.Second-2*time.Minute)) || widest > 2*time.Minute {
		t.Errorf("snapshots end at %v with gaps up to %v: want them spread to the end", last.Sub(t0), widest)
	}
	t.Logf("%d snapshots of %d scrapes, gaps up to %v", len(snaps), seconds, widest)
}
