package load

import (
	"sort"
	"strings"
	"time"

	"fakelet.dev/fakelet/measure/scrape"
)

// Point is a set of values for the interval between two consecutive scrapes, at the later one.
type Point struct {
	At     time.Time          `json:"at"`
	Values map[string]float64 `json:"values"`
}

// Timeline is the load over the run, scrape by scrape, for charts.
type Timeline struct {
	// RequestRate is requests per second by "VERB resource[/subresource]" for nodes and leases (the
	// heartbeat resources), and "other" for the rest.
	RequestRate []Point `json:"requestRate,omitempty"`
	// LatencyP99 is the apiserver's p99 request latency in seconds, by the same keys where there were
	// requests, and "*" for every request but WATCH and CONNECT.
	LatencyP99 []Point `json:"latencyP99,omitempty"`
	// EtcdWALRate is the bytes etcd wrote to its WAL per second, under "wal".
	EtcdWALRate []Point `json:"etcdWalRate,omitempty"`
}

// heartbeatResources are the resources whose requests the timeline shows one by one.
var heartbeatResources = map[string]bool{"nodes": true, "leases": true}

// seriesKey names a request kind in a timeline: "PUT leases", "PATCH nodes/status".
func seriesKey(verb, resource, subresource string) string {
	if !heartbeatResources[resource] {
		return "other"
	}
	k := verb + " " + resource
	if subresource != "" {
		k += "/" + subresource
	}
	return k
}

// ComputeTimeline returns the load between each pair of consecutive scrapes of the run.
func ComputeTimeline(snaps []scrape.Snapshot) Timeline {
	var t Timeline
	api := component(snaps, APIServer)
	for i := 1; i < len(api); i++ {
		pair := api[i-1 : i+1]
		secs := pair[1].At.Sub(pair[0].At).Seconds()
		if secs <= 0 {
			continue
		}
		rates := map[string]float64{}
		if f := Delta(pair, "apiserver_request_total"); f != nil {
			for _, s := range f.Series {
				rates[seriesKey(s.Labels[0], s.Labels[1], s.Labels[2])] += s.Value / secs
			}
		}
		t.RequestRate = append(t.RequestRate, Point{At: pair[1].At, Values: rates})
		p99 := map[string]float64{}
		for _, l := range latencies(Delta(pair, "apiserver_request_duration_seconds"), true) {
			if l.Verb == "*" {
				p99["*"] = l.P99
			} else if heartbeatResources[l.Resource] {
				p99[seriesKey(l.Verb, l.Resource, l.Subresource)] = l.P99
			}
		}
		t.LatencyP99 = append(t.LatencyP99, Point{At: pair[1].At, Values: p99})
	}
	etcd := component(snaps, Etcd)
	for i := 1; i < len(etcd); i++ {
		pair := etcd[i-1 : i+1]
		if secs := pair[1].At.Sub(pair[0].At).Seconds(); secs > 0 {
			t.EtcdWALRate = append(t.EtcdWALRate, Point{At: pair[1].At, Values: map[string]float64{
				"wal": counterIncrease(pair, "etcd_disk_wal_write_bytes_total") / secs,
			}})
		}
	}
	return t
}

// Keys returns every key of points, the heartbeat kinds first in order of name, then "other" and "*".
func Keys(points []Point) []string {
	seen := map[string]bool{}
	for _, p := range points {
		for k := range p.Values {
			seen[k] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		sa, sb := strings.Contains(a, " "), strings.Contains(b, " ")
		if sa != sb {
			return sa
		}
		return a < b
	})
	return keys
}
