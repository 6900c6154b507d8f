package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
)

// Heartbeat result label values.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

// requestDescs are the metrics of what the fleets' agents send. They are read from each fleet's
// fleet.Tally at scrape time: the tally is the one recorder on the heartbeat path, and the report's
// fleet view reads the same counts.
type requestDescs struct {
	duration, requestBytes, responseBytes, heartbeats, intervals *prometheus.Desc
}

func newRequestDescs() requestDescs {
	return requestDescs{
		duration: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "request_duration_seconds"),
			"Duration of the fleet's API requests, by verb and resource as the agent names them and HTTP status code (\"timeout\" or \"error\" without one).",
			[]string{"verb", "resource", "code"}, nil),
		requestBytes: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "request_bytes_total"),
			"Body bytes of the fleet's API requests, client-go's retries included, by verb, resource and HTTP status code.",
			[]string{"verb", "resource", "code"}, nil),
		responseBytes: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "response_bytes_total"),
			"Body bytes of the answers to the fleet's API requests, client-go's retries included, by verb, resource and HTTP status code.",
			[]string{"verb", "resource", "code"}, nil),
		heartbeats: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "heartbeats_total"),
			"Heartbeat attempts of the fleet's nodes by kind (lease renewal or status patch) and result.",
			[]string{"kind", "result"}, nil),
		intervals: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "lease_renewal_interval_seconds"),
			"Time between a node's successive successful lease renewals; a kubelet's is 1.00-1.04 renew intervals plus one request.",
			nil, nil),
	}
}

func (d requestDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.duration
	ch <- d.requestBytes
	ch <- d.responseBytes
	ch <- d.heartbeats
	ch <- d.intervals
}

// collect sums the tallies (fleets sharded in one process share their label values) and sends them.
func (d requestDescs) collect(ch chan<- prometheus.Metric, tallies []*fleet.Tally) {
	if len(tallies) == 0 {
		return
	}
	type sum struct {
		fleet.RequestSeries
		buckets map[float64]uint64
	}
	series := map[[3]string]*sum{}
	var keys [][3]string
	var beats [2][2]int64
	var intervals *fleet.Histogram
	intervalBuckets := map[float64]uint64{}
	for _, t := range tallies {
		for _, s := range t.Series() {
			k := [3]string{s.Verb, s.Resource, s.Code}
			m := series[k]
			if m == nil {
				m = &sum{RequestSeries: fleet.RequestSeries{Verb: s.Verb, Resource: s.Resource, Code: s.Code}, buckets: map[float64]uint64{}}
				series[k] = m
				keys = append(keys, k)
			}
			m.Count += s.Count
			m.RequestBytes += s.RequestBytes
			m.ResponseBytes += s.ResponseBytes
			m.Latency.Sum += s.Latency.Sum
			addBuckets(m.buckets, s.Latency)
		}
		for k, kind := range []string{agent.KindLease, agent.KindStatus} {
			ok, failed := t.Heartbeats(kind)
			beats[k][0] += ok
			beats[k][1] += failed
		}
		_, h := t.Renewals()
		if intervals == nil {
			intervals = &fleet.Histogram{}
		}
		intervals.Count += h.Count
		intervals.Sum += h.Sum
		addBuckets(intervalBuckets, h)
	}
	slices.SortFunc(keys, func(a, b [3]string) int { return slices.Compare(a[:], b[:]) })
	for _, k := range keys {
		s := series[k]
		ch <- prometheus.MustNewConstHistogram(d.duration, uint64(s.Count), s.Latency.Sum, s.buckets, k[:]...)
		ch <- prometheus.MustNewConstMetric(d.requestBytes, prometheus.CounterValue, float64(s.RequestBytes), k[:]...)
		ch <- prometheus.MustNewConstMetric(d.responseBytes, prometheus.CounterValue, float64(s.ResponseBytes), k[:]...)
	}
	for k, kind := range []string{agent.KindLease, agent.KindStatus} {
		ch <- prometheus.MustNewConstMetric(d.heartbeats, prometheus.CounterValue, float64(beats[k][0]), kind, ResultSuccess)
		ch <- prometheus.MustNewConstMetric(d.heartbeats, prometheus.CounterValue, float64(beats[k][1]), kind, ResultFailure)
	}
	ch <- prometheus.MustNewConstHistogram(d.intervals, intervals.Count, intervals.Sum, intervalBuckets)
}

// addBuckets adds h's cumulative counts into buckets, by upper bound. The fleets of one process share
// their bounds: the request buckets are fixed and the renewal ones follow the renew interval, which
// the shards of a fleet share.
func addBuckets(buckets map[float64]uint64, h fleet.Histogram) {
	for i, b := range h.Bounds {
		buckets[b] += h.Cumulative[i]
	}
}
