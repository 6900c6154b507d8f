package scrape

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"k8s.io/utils/clock"
)

// DefaultInterval is how often the Scraper scrapes between phase boundaries: often enough for a
// chart of a ten-minute run, rare enough that parsing 2 MB of apiserver metrics costs little.
const DefaultInterval = 15 * time.Second

// scrapeTimeout bounds one scrape of one source.
const scrapeTimeout = 10 * time.Second

// Source is something to scrape: a component's /metrics endpoint, or the fleet itself.
type Source interface {
	// Component names what is scraped: etcd, kube-apiserver, kube-controller-manager, fakelet.
	Component() string
	// Scrape returns the selected families.
	Scrape(ctx context.Context) (map[string]*Family, error)
}

// HTTPSource scrapes a Prometheus endpoint, asking for the delimited protobuf exposition.
type HTTPSource struct {
	Name   string
	URL    string
	Client *http.Client
}

// Component implements Source.
func (h *HTTPSource) Component() string { return h.Name }

// Scrape implements Source.
func (h *HTTPSource) Scrape(ctx context.Context) (map[string]*Family, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s %s: %w", h.Name, h.URL, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim))+";q=0.7,text/plain;version=0.0.4;q=0.3")
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s %s: %w", h.Name, h.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s %s: %s", h.Name, h.URL, resp.Status)
	}
	fams, err := Parse(resp.Body, expfmt.ResponseFormat(resp.Header), Selection)
	if err != nil {
		return nil, fmt.Errorf("scrape %s %s: %w", h.Name, h.URL, err)
	}
	return fams, nil
}

// maxIntervalRounds bounds the interval scrapes a Scraper keeps: past it, every other one is dropped
// and from then on only every other tick is kept, so a run of any length keeps between half and all
// of them (at the default interval, two hours' worth at full resolution). Scrapes asked for with
// Scrape, at phase boundaries, are always kept: the load of each phase is computed between them.
const maxIntervalRounds = 480

// Scraper scrapes its sources at an interval and when asked, and keeps the snapshots.
type Scraper struct {
	sources  []Source
	interval time.Duration
	clock    clock.WithTicker

	mu     sync.Mutex // serializes scrapes, so that snapshots are in order of time
	rounds []round
	kept   int // rounds kept from ticks
	ticks  int // ticks so far
	stride int // a tick is scraped when ticks is a multiple of it
}

// round is the snapshots of one scrape of every source.
type round struct {
	snaps  []Snapshot
	pinned bool // asked for (Scrape), not from a tick
}

// NewScraper returns a scraper of sources every interval (DefaultInterval if 0) on clk (the real
// clock if nil), which times the interval and timestamps the snapshots.
func NewScraper(sources []Source, interval time.Duration, clk clock.WithTicker) *Scraper {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Scraper{sources: sources, interval: interval, clock: clk, stride: 1}
}

// Run scrapes at once and then every interval until ctx ends.
func (s *Scraper) Run(ctx context.Context) {
	t := s.clock.NewTicker(s.interval)
	defer t.Stop()
	s.Scrape(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			s.tick(ctx)
		}
	}
}

// tick is one tick of the interval: a scrape, unless the kept ticks have been thinned to every
// stride-th.
func (s *Scraper) tick(ctx context.Context) {
	s.mu.Lock()
	s.ticks++
	due := s.ticks%s.stride == 0
	s.mu.Unlock()
	if due {
		s.scrape(ctx, false)
	}
}

// Scrape scrapes every source now, concurrently, and keeps the snapshots; a failed scrape is kept
// with its error. Each snapshot is timestamped when its scrape began.
func (s *Scraper) Scrape(ctx context.Context) { s.scrape(ctx, true) }

func (s *Scraper) scrape(ctx context.Context, pinned bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snaps := make([]Snapshot, len(s.sources))
	var wg sync.WaitGroup
	for i, src := range s.sources {
		wg.Go(func() {
			at := s.clock.Now()
			sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
			defer cancel()
			fams, err := src.Scrape(sctx)
			snaps[i] = Snapshot{Component: src.Component(), At: at, Families: fams}
			if err != nil {
				snaps[i].Err, snaps[i].Families = err.Error(), nil
			}
		})
	}
	wg.Wait()
	s.rounds = append(s.rounds, round{snaps: snaps, pinned: pinned})
	if !pinned {
		if s.kept++; s.kept > maxIntervalRounds {
			s.thin()
		}
	}
}

// thin drops every other round from ticks and halves the ticks scraped from now on. s.mu must be held.
func (s *Scraper) thin() {
	out, n := s.rounds[:0], 0
	for _, r := range s.rounds {
		if !r.pinned {
			if n++; n%2 == 0 {
				continue
			}
		}
		out = append(out, r)
	}
	clear(s.rounds[len(out):])
	s.rounds, s.kept, s.stride = out, (s.kept+1)/2, s.stride*2
}

// Snapshots returns the snapshots kept, in order of scraping: every one asked for with Scrape, and
// of the interval's those maxIntervalRounds allows.
func (s *Scraper) Snapshots() []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Snapshot
	for _, r := range s.rounds {
		out = append(out, r.snaps...)
	}
	return out
}
