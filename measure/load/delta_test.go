package load

import (
	"math"
	"slices"
	"testing"
	"time"

	"fakelet.dev/fakelet/measure/scrape"
)

func TestIncrease(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		want   float64
	}{
		{"steady", []float64{10, 15, 30}, 20},
		{"one value", []float64{10}, 0},
		{"reset counts the new value whole: 5 + 0 + 7 + 3", []float64{10, 15, 0, 7, 10}, 15},
		{"reset to a non-zero value: (15-10) + 4 + (9-4)", []float64{10, 15, 4, 9}, 14},
		{"two resets: 10 + 2 + (5-2) + 1", []float64{0, 10, 2, 5, 1}, 16},
	} {
		if got := Increase(tc.values); got != tc.want {
			t.Errorf("%s: Increase(%v) = %v, want %v", tc.name, tc.values, got, tc.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	bounds := []float64{0.1, 0.5, 1, inf}
	for _, tc := range []struct {
		name       string
		q          float64
		cumulative []float64
		want       float64
	}{
		// 100 observations: 50 in (0, 0.1], 30 in (0.1, 0.5], 20 in (0.5, 1].
		// p50: rank 50, the end of the first bucket: 0 + 0.1 x 50/50.
		{"p50 at a bucket's top", 0.5, []float64{50, 80, 100, 100}, 0.1},
		// p90: rank 90, 10 into the third bucket of 20: 0.5 + 0.5 x 10/20.
		{"p90 interpolated", 0.9, []float64{50, 80, 100, 100}, 0.75},
		// p99: rank 99, 19 of 20: 0.5 + 0.5 x 19/20.
		{"p99 interpolated", 0.99, []float64{50, 80, 100, 100}, 0.975},
		// p25: rank 25, 25 of 50 in the first bucket, which starts at 0: 0.1 x 25/50.
		{"lowest bucket starts at zero", 0.25, []float64{50, 80, 100, 100}, 0.05},
		// 10 observations, 2 of them above 1 s: p99 falls in +Inf, read as the highest finite bound.
		{"rank in the +Inf bucket", 0.99, []float64{4, 6, 8, 10}, 1},
	} {
		if got := Quantile(tc.q, bounds, tc.cumulative); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: Quantile(%v) = %v, want %v", tc.name, tc.q, got, tc.want)
		}
	}
	if got := Quantile(0.5, bounds, []float64{0, 0, 0, 0}); !math.IsNaN(got) {
		t.Errorf("empty histogram: %v, want NaN", got)
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func sec(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// apiSnap is an apiserver snapshot with PUT leases requests and their latency histogram.
func apiSnap(at int, puts float64, buckets ...float64) scrape.Snapshot {
	bounds := []float64{0.01, 0.1, math.Inf(1)}
	return scrape.Snapshot{Component: APIServer, At: sec(at), Families: map[string]*scrape.Family{
		"apiserver_request_total": {Type: scrape.Counter, Labels: []string{"verb", "resource", "subresource", "code"}, Series: map[string]*scrape.Series{
			"PUT|leases||200": {Labels: []string{"PUT", "leases", "", "200"}, Value: puts},
		}},
		"apiserver_request_duration_seconds": {Type: scrape.Histogram, Labels: []string{"verb", "resource", "subresource"}, Series: map[string]*scrape.Series{
			"PUT|leases|": {Labels: []string{"PUT", "leases", ""}, Value: buckets[2], Bounds: bounds, Buckets: buckets},
		}},
		"process_cpu_seconds_total": {Type: scrape.Counter, Series: map[string]*scrape.Series{"": {Value: float64(at) / 10}}},
	}}
}

// The apiserver restarts between the scrapes at 20 s and 30 s: its counters start again from zero.
func TestComputeAcrossACounterReset(t *testing.T) {
	snaps := []scrape.Snapshot{
		apiSnap(0, 1000, 900, 990, 1000),
		apiSnap(10, 1100, 990, 1090, 1100),
		apiSnap(20, 1200, 1080, 1190, 1200),
		{Component: APIServer, At: sec(25), Err: "connection refused"}, // restarting: ignored
		apiSnap(30, 50, 40, 50, 50),                                    // restarted: 50 since
		apiSnap(40, 150, 130, 150, 150),
	}
	phases := Compute(snaps, []Window{
		{Name: "before", Start: sec(0), End: sec(20)},
		{Name: "across", Start: sec(20), End: sec(40)},
	})
	before, across := phases[0], phases[1]
	if before.Seconds != 20 || len(before.Requests) != 1 || before.Requests[0].Count != 200 || before.Requests[0].Rate != 10 {
		t.Errorf("before: %v s, requests %+v; want 20 s, 200 at 10/s", before.Seconds, before.Requests)
	}
	// 20 s -> 30 s: reset, counts 50; 30 s -> 40 s: 100.
	if across.Seconds != 20 || len(across.Requests) != 1 || across.Requests[0].Count != 150 || across.Requests[0].Rate != 7.5 {
		t.Errorf("across: %v s, requests %+v; want 20 s, 150 at 7.5/s", across.Seconds, across.Requests)
	}
	// Buckets over "across": reset step counts [40, 50, 50], then [90, 100, 100]: [130, 150, 150].
	// p50: rank 75 of 150 falls in the first bucket, (0, 0.01] holding 130: 0.01 x 75/130.
	lat := across.Latency
	if len(lat) != 2 || lat[0].Verb != "*" || lat[1].Count != 150 {
		t.Fatalf("across latency rows %+v, want the * row and PUT leases with 150", lat)
	}
	if want := 0.01 * 75 / 130; math.Abs(lat[1].P50-want) > 1e-12 {
		t.Errorf("across p50 %v, want %v", lat[1].P50, want)
	}
	// p99: rank 148.5, in (0.01, 0.1] holding 20 with 130 below: 0.01 + 0.09 x 18.5/20.
	if want := 0.01 + 0.09*18.5/20; math.Abs(lat[1].P99-want) > 1e-12 {
		t.Errorf("across p99 %v, want %v", lat[1].P99, want)
	}
	if len(across.Processes) != 1 || math.Abs(across.Processes[0].CPUSeconds-2) > 1e-9 {
		t.Errorf("across processes %+v, want 2 CPU-seconds (2 s at 20 s, 4 s at 40 s)", across.Processes)
	}
}

func TestDeltaCountsANewSeriesFromZero(t *testing.T) {
	a := apiSnap(0, 10, 1, 1, 1)
	b := apiSnap(10, 20, 1, 1, 1)
	b.Families["apiserver_request_total"].Series["PATCH|nodes|status|200"] = &scrape.Series{Labels: []string{"PATCH", "nodes", "status", "200"}, Value: 7}
	f := Delta([]*scrape.Snapshot{&a, &b}, "apiserver_request_total")
	if got := f.Series["PATCH|nodes|status|200"].Value; got != 7 {
		t.Errorf("new series counted %v, want 7", got)
	}
	if got := f.Series["PUT|leases||200"].Value; got != 10 {
		t.Errorf("PUT leases counted %v, want 10", got)
	}
}

// The local control plane's scheduler is one more process of each phase.
func TestComputeCountsTheSchedulersProcess(t *testing.T) {
	sched := func(at int, cpu, rss float64) scrape.Snapshot {
		return scrape.Snapshot{Component: Scheduler, At: sec(at), Families: map[string]*scrape.Family{
			"process_cpu_seconds_total":     {Type: scrape.Counter, Series: map[string]*scrape.Series{"": {Value: cpu}}},
			"process_resident_memory_bytes": {Type: scrape.Gauge, Series: map[string]*scrape.Series{"": {Value: rss}}},
		}}
	}
	snaps := []scrape.Snapshot{apiSnap(0, 0, 0, 0, 0), sched(0, 1, 50e6), apiSnap(10, 10, 10, 10, 10), sched(10, 1.5, 60e6)}
	p := Compute(snaps, []Window{{Name: "run", Start: sec(0), End: sec(10)}})[0]
	i := slices.IndexFunc(p.Processes, func(pr Process) bool { return pr.Component == Scheduler })
	if i < 0 || math.Abs(p.Processes[i].CPUSeconds-0.5) > 1e-9 {
		t.Errorf("processes %+v, want kube-scheduler's 0.5 CPU-seconds", p.Processes)
	}
}
