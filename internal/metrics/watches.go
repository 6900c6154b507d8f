package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"fakelet.dev/fakelet/fleet"
)

// watchDescs are the agents' watches by resource, read from each fleet's tally at scrape time
// (fleet.Tally.Watches), under the names the report's fleet view gives them (measure/scrape), so
// that a process outside the run, such as fakelet bench, can read them too.
type watchDescs struct {
	held, lists, opens, events *prometheus.Desc
}

func newWatchDescs() watchDescs {
	resource := []string{"resource"}
	return watchDescs{
		held: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "watches"),
			"Watch streams the fleet's agents hold open now, by resource.", resource, nil),
		lists: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "watch_lists_total"),
			"Streaming lists (sendInitialEvents) the fleet's agents opened, by resource: each reflector's first and every relist.", resource, nil),
		opens: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "watch_opens_total"),
			"Watches the fleet's agents opened from a resource version, by resource: a reflector resuming after the server's timeout.", resource, nil),
		events: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "watch_events_received_total"),
			"Watch events the fleet's agents received, bookmarks included, by resource.", resource, nil),
	}
}

func (d watchDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.held
	ch <- d.lists
	ch <- d.opens
	ch <- d.events
}

// collect sums the tallies' watches by resource and sends them; a fleet that watches nothing (the
// heartbeat footprint) has no series.
func (d watchDescs) collect(ch chan<- prometheus.Metric, tallies []*fleet.Tally) {
	sums := map[string]*fleet.WatchSeries{}
	var order []string
	for _, t := range tallies {
		for _, w := range t.Watches() {
			s := sums[w.Resource]
			if s == nil {
				s = &fleet.WatchSeries{Resource: w.Resource}
				sums[w.Resource] = s
				order = append(order, w.Resource)
			}
			s.Held += w.Held
			s.Lists += w.Lists
			s.Watches += w.Watches
			s.Events += w.Events
		}
	}
	for _, r := range order {
		s := sums[r]
		ch <- prometheus.MustNewConstMetric(d.held, prometheus.GaugeValue, float64(s.Held), r)
		ch <- prometheus.MustNewConstMetric(d.lists, prometheus.CounterValue, float64(s.Lists), r)
		ch <- prometheus.MustNewConstMetric(d.opens, prometheus.CounterValue, float64(s.Watches), r)
		ch <- prometheus.MustNewConstMetric(d.events, prometheus.CounterValue, float64(s.Events), r)
	}
}
