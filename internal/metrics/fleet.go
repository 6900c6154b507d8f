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

// connectedFleet is a Fleet that counts its agents' connections (*fleet.Fleet does), for
// fakelet_connections_open and fakelet_connections_dialed_total.
type connectedFleet interface {
	Connections() fleet.Connections
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
// heartbeat, renewal and watch metrics. Fleets of the same name (a fleet sharded over several fleet.Fleet
// values in one process) are summed, and every fleet's requests are.
func (m *Metrics) RegisterFleet(f Fleet) { m.fleets.add(f) }

// fleetCollector reads each fleet's progress and tally when scraped, so the heartbeat path pays for
// none of the metrics but the tally's atomic adds.
type fleetCollector struct {
	nodes, size       *prometheus.Desc
	connsOpen, dialed *prometheus.Desc
	requests          requestDescs
	watches           watchDescs

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
		// mode is the fleet's connection mode: shared or per-node.
		connsOpen: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "connections_open"),
			"TCP connections the fleet's agents hold to the apiserver (the fleet's own client's not included).",
			[]string{"fleet", "mode"}, nil),
		dialed: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "connections_dialed_total"),
			"TCP connections the fleet's agents opened to the apiserver, each with its TLS handshake.",
			[]string{"fleet", "mode"}, nil),
		requests: newRequestDescs(),
		watches:  newWatchDescs(),
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
	ch <- c.connsOpen
	ch <- c.dialed
	c.requests.describe(ch)
	c.watches.describe(ch)
}

// Collect implements prometheus.Collector.
func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	fleets := append([]Fleet(nil), c.fleets...)
	c.mu.Unlock()
	type counts struct {
		size, started, registered, ready, failed int
		conns                                    map[fleet.ConnectionMode][2]int64 // open, dialed
	}
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
		if cf, ok := f.(connectedFleet); ok {
			conns := cf.Connections()
			if n.conns == nil {
				n.conns = map[fleet.ConnectionMode][2]int64{}
			}
			sum := n.conns[conns.Mode]
			n.conns[conns.Mode] = [2]int64{sum[0] + conns.Open, sum[1] + conns.Dialed}
		}
	}
	for _, name := range names {
		n := byName[name]
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(n.size), name)
		for mode, conns := range n.conns {
			ch <- prometheus.MustNewConstMetric(c.connsOpen, prometheus.GaugeValue, float64(conns[0]), name, string(mode))
			ch <- prometheus.MustNewConstMetric(c.dialed, prometheus.CounterValue, float64(conns[1]), name, string(mode))
		}
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
	c.watches.collect(ch, tallies)
}
