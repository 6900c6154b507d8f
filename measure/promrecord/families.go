package promrecord

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"fakelet.dev/fakelet/measure/load"
	"fakelet.dev/fakelet/measure/scrape"
)

// components are the load components, in the order of their snapshots.
var components = []string{load.APIServer, load.Etcd, load.ControllerManager, load.Scheduler, load.Fleet}

// families are the families of scrape.Selection that package load reads of each component.
var families = map[string][]string{
	load.APIServer: {
		"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_request_body_size_bytes",
		"apiserver_response_sizes", "apiserver_flowcontrol_dispatched_requests_total",
		"apiserver_flowcontrol_rejected_requests_total", "apiserver_flowcontrol_request_wait_duration_seconds",
		"apiserver_watch_events_total", "apiserver_watch_events_sizes", "etcd_request_duration_seconds",
		"process_cpu_seconds_total", "process_resident_memory_bytes",
	},
	load.Etcd: {
		"etcd_mvcc_db_total_size_in_bytes", "etcd_mvcc_db_total_size_in_use_in_bytes",
		"etcd_disk_wal_write_bytes_total", "etcd_mvcc_put_total", "etcd_network_client_grpc_received_bytes_total",
		"etcd_disk_wal_fsync_duration_seconds", "etcd_disk_backend_commit_duration_seconds",
		"process_cpu_seconds_total", "process_resident_memory_bytes",
	},
	load.ControllerManager: {
		"node_collector_zone_health", "node_collector_unhealthy_nodes_in_zone", "node_collector_evictions_total",
		"node_collector_update_all_nodes_health_duration_seconds",
		"process_cpu_seconds_total", "process_resident_memory_bytes",
	},
	load.Scheduler: {"process_cpu_seconds_total", "process_resident_memory_bytes"},
	load.Fleet: {
		scrape.FleetRequests, scrape.FleetRequestDuration, scrape.FleetRequestBytes, scrape.FleetResponseBytes,
		scrape.FleetSendLag, "process_cpu_seconds_total", "process_resident_memory_bytes",
	},
}

// fleetMetric is the metric fakelet's /metrics exposes for each family of the fleet's own view:
// the request count is the request duration histogram's _count, by code rather than result.
var fleetMetric = map[string]string{
	scrape.FleetRequests:        "fakelet_request_duration_seconds_count",
	scrape.FleetRequestDuration: "fakelet_request_duration_seconds",
}

// answered tells the codes the fleet's view counts as answers a kubelet expects (fleet.Tally) from
// failures: successes, not found, and a 409 of a create (already exists; of an update it is a
// conflict, a failure).
func answered(verb, code string) bool {
	switch code {
	case "200", "201", "404":
		return true
	case "409":
		return verb == "create"
	}
	return false
}

// family reads one family of one component at t: for a counter or a histogram the increase since
// since, for a gauge its value; nil if Prometheus has no series of it.
func (r *reader) family(ctx context.Context, component, name string, since, t time.Time) (*scrape.Family, error) {
	sel, ok := scrape.Selection[name]
	if !ok {
		return nil, fmt.Errorf("family %s is not among those the report reads", name)
	}
	metric := name
	if component == load.Fleet && fleetMetric[name] != "" {
		metric = fleetMetric[name]
	}
	group := slices.Clone(sel.Labels)
	if i := slices.Index(group, "result"); i >= 0 {
		group[i] = "code"
	}
	selector := fmt.Sprintf("%s{job=%q}", metric, r.job(component))
	window := fmt.Sprintf("[%dms]", t.Sub(since).Milliseconds())
	f := &scrape.Family{Type: sel.Type, Labels: sel.Labels, Series: map[string]*scrape.Series{}}
	switch sel.Type {
	case scrape.Gauge:
		vec, err := r.instant(ctx, sumBy(group, selector), t)
		if err != nil {
			return nil, err
		}
		for _, s := range vec {
			seriesOf(f, s.Metric).Value += float64(s.Value)
		}
	case scrape.Counter:
		vec, err := r.instant(ctx, sumBy(group, "increase("+selector+window+")"), t)
		if err != nil {
			return nil, err
		}
		for _, s := range vec {
			seriesOf(f, s.Metric).Value += float64(s.Value)
		}
	case scrape.Histogram:
		buckets, err := r.instant(ctx, sumBy(append(slices.Clone(group), "le"), "increase("+strings.Replace(selector, "{", "_bucket{", 1)+window+")"), t)
		if err != nil {
			return nil, err
		}
		sums, err := r.instant(ctx, sumBy(group, "increase("+strings.Replace(selector, "{", "_sum{", 1)+window+")"), t)
		if err != nil {
			return nil, err
		}
		if err := addBuckets(f, buckets); err != nil {
			return nil, fmt.Errorf("%s of %s at %s: %w", name, r.job(component), t.UTC().Format(time.RFC3339), err)
		}
		for _, s := range sums {
			if sr := f.Series[scrape.Key(labelValues(f, s.Metric)...)]; sr != nil {
				sr.Sum += float64(s.Value)
			}
		}
	}
	if len(f.Series) == 0 {
		return nil, nil
	}
	return f, nil
}

func sumBy(labels []string, expr string) string {
	return fmt.Sprintf("sum by (%s) (%s)", strings.Join(labels, ", "), expr)
}

// labelValues are a sample's values of the family's labels; "result" is read from "code".
func labelValues(f *scrape.Family, m model.Metric) []string {
	values := make([]string, len(f.Labels))
	for i, l := range f.Labels {
		if l == "result" {
			values[i] = "error"
			if answered(string(m["verb"]), string(m["code"])) {
				values[i] = "ok"
			}
			continue
		}
		values[i] = string(m[model.LabelName(l)])
	}
	return values
}

// seriesOf returns the family's series of a sample's labels, adding it if needed.
func seriesOf(f *scrape.Family, m model.Metric) *scrape.Series {
	values := labelValues(f, m)
	k := scrape.Key(values...)
	s := f.Series[k]
	if s == nil {
		s = &scrape.Series{Labels: values}
		f.Series[k] = s
	}
	return s
}

// addBuckets adds the samples of a histogram's _bucket series, by le, into the family's series as
// cumulative buckets, +Inf last; the +Inf bucket is the count.
func addBuckets(f *scrape.Family, vec model.Vector) error {
	type bucket struct{ le, count float64 }
	byKey := map[string][]bucket{}
	for _, s := range vec {
		le, err := strconv.ParseFloat(string(s.Metric["le"]), 64)
		if err != nil {
			return fmt.Errorf("bucket le=%q: %w", s.Metric["le"], err)
		}
		sr := seriesOf(f, s.Metric)
		k := scrape.Key(sr.Labels...)
		byKey[k] = append(byKey[k], bucket{le, float64(s.Value)})
	}
	for k, bs := range byKey {
		slices.SortFunc(bs, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
		bs = slices.CompactFunc(bs, func(a, b bucket) bool { return a.le == b.le })
		if !math.IsInf(bs[len(bs)-1].le, 1) {
			return fmt.Errorf("series %s has no +Inf bucket", k)
		}
		sr := f.Series[k]
		sr.Bounds, sr.Buckets = make([]float64, len(bs)), make([]float64, len(bs))
		for i, b := range bs {
			sr.Bounds[i], sr.Buckets[i] = b.le, b.count
		}
		sr.Value = bs[len(bs)-1].count
	}
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
