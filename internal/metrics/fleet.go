package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"fakelet.dev/fakelet/fleet"
)

// Fleet is what the node state and request metrics read at each scrape; *fleet.Fleet is one.
type Fleet interface {
	Progress() fleet.Progress
	Config() fleet.Config
	Tally() *fleet.Tally
}

// Node states of fakelet_nodes. They overlap: a registered node is ready or not ready, and was
// started.
const (
	StateStarted    = "started"    // agents started (a Node is being registered or renewed)
	StateRegistered = "registered" // the fleet's Nodes the fleet's watch sees in the cluster
	StateReady      = "ready"      // of those, with Ready=True
	StateNotReady   = "not_ready"  // of those, with Ready False or Unknown, or no Ready yet
	StateFailed     = "failed"     // agents that gave up for good
)

// RegisterFleet adds a fleet to fakelet_nodes and fakelet_fleet_nodes, and its tally to the request,
// heartbeat and renewal metrics. Fleets of the same name (a fleet sharded over several fleet.Fleet
// values in one process) are summed, and every fleet's requests are.
func (m *Metrics) RegisterFleet(f Fleet) { m.fleets.add(f) }

// fleetCollector reads each fleet's progress and tally when scraped, so the heartbeat path pays for
// none of the metrics but the tally's atomic adds.
type fleetCollector struct {
	nodes, size *prometheus.Desc
	requests    requestDescs

	mu     sync.Mutex
	fleets []Fleet
}

func newFleetCollector() *fleetCollector {
	return &fleetCollector{
		// fleet is the fleet's name, the value of its fakelet.dev/fleet label.
		nodes: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "nodes"),
			"The fleet's nodes by state, read from the fleet at scrape time; states overlap (registered = ready + not_ready).",
			[]string{"fleet", "state"}, nil),
		size: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "fleet_nodes"),
			"Nodes the fleet runs (its --nodes).", []string{"fleet"}, nil),
		requests: newRequestDescs(),
	}
}

func (c *fleetCollector) add(f Fleet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fleets = append(c.fleets, f)
}

// Describe implements prometheus.Collector.
func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.nodes
	ch <- c.size
	c.requests.describe(ch)
}

// Collect implements prometheus.Collector.
func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	fleets := append([]Fleet(nil), c.fleets...)
	c.mu.Unlock()
	type counts struct{ size, started, registered, ready, failed int }
	byName := map[string]*counts{}
	var names []string
	var tallies []*fleet.Tally
	for _, f := range fleets {
		if t := f.Tally(); t != nil {
			tallies = append(tallies, t)
		}
		name := f.Config().Fleet
		n := byName[name]
		if n == nil {
			n = &counts{}
			byName[name] = n
			names = append(names, name)
		}
		p := f.Progress()
		n.size += p.Nodes
		n.started += p.Started
		n.registered += p.Registered
		n.ready += p.Ready
		n.failed += p.Failed
	}
	for _, name := range names {
		n := byName[name]
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(n.size), name)
		for _, s := range []struct {
			state string
			v     int
		}{
			{StateStarted, n.started},
			{StateRegistered, n.registered},
			{StateReady, n.ready},
			{StateNotReady, n.registered - n.ready},
			{StateFailed, n.failed},
		} {
			ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(s.v), name, s.state)
		}
	}
	c.requests.collect(ch, tallies)
}
