package load

import (
	"maps"
	"slices"
	"sort"
	"time"

	"fakelet.dev/fakelet/measure/scrape"
)

// Component names, as the local control plane and FleetSource name them.
const (
	APIServer         = "kube-apiserver"
	Etcd              = "etcd"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Fleet             = scrape.FleetComponent
)

// Window is a stretch of the run to compute the load of: a phase, or the whole run.
type Window struct {
	Name       string
	Start, End time.Time
}

// Phase is the load of one window. Counts are increases over the window; rates divide them by Seconds.
// Latencies and sizes are estimated from histogram buckets (see Quantile), in seconds and bytes.
type Phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Seconds is the time between the apiserver scrapes that bound the window.
	Seconds float64 `json:"seconds"`
	// Requests counts apiserver_request_total by verb, resource, subresource and code.
	Requests []Requests `json:"requests,omitempty"`
	// Latency is apiserver_request_duration_seconds by verb, resource and subresource (WATCH and
	// CONNECT, which last as long as they are open, left out); the row with verb "*" is all of them.
	Latency []Latency `json:"latency,omitempty"`
	// RequestBytes and ResponseBytes are apiserver_request_body_size_bytes and
	// apiserver_response_sizes: the bytes the apiserver read and wrote, by verb and resource.
	RequestBytes  []Bytes `json:"requestBytes,omitempty"`
	ResponseBytes []Bytes `json:"responseBytes,omitempty"`
	// PriorityLevels is API Priority and Fairness per priority level.
	PriorityLevels []PriorityLevel `json:"priorityLevels,omitempty"`
	// Watch is apiserver_watch_events_total and _sizes by resource.
	Watch []Watch `json:"watch,omitempty"`
	// Processes is the CPU and memory of each scraped component.
	Processes []Process `json:"processes,omitempty"`
	Etcd      *EtcdLoad `json:"etcd,omitempty"`
	// EtcdLatency is the apiserver's etcd_request_duration_seconds by operation (in Verb) and resource.
	EtcdLatency   []Latency      `json:"etcdLatency,omitempty"`
	NodeCollector *NodeCollector `json:"nodeCollector,omitempty"`
	// Fleet is the fleet's own view of its requests.
	Fleet []FleetRequests `json:"fleet,omitempty"`
	// SendLag is fakelet's own delay in sending its heartbeats, from fakelet_heartbeat_send_lag_seconds.
	SendLag *SendLag `json:"sendLag,omitempty"`
	// FleetWatches is the agents' own watches by resource (the kubelet footprint's), as the fleet
	// counts them.
	FleetWatches []FleetWatch `json:"fleetWatches,omitempty"`
}

// FleetWatch is the agents' watches of one resource in a window.
type FleetWatch struct {
	Resource string `json:"resource"`
	// Held is the most streams open at once at a scrape of the window.
	Held float64 `json:"held"`
	// Lists counts the streaming lists opened (sendInitialEvents): each reflector's first list and
	// its relists after a 410 Gone or a broken stream. Watches counts the watches resumed from a
	// resource version when the server ended one at its timeout.
	Lists   float64 `json:"lists"`
	Watches float64 `json:"watches"`
	// Events counts the events the agents received, bookmarks included.
	Events     float64 `json:"events"`
	EventsRate float64 `json:"eventsRate"`
}

// SendLag is the quantiles, in seconds, of fakelet's send lag in a window: for each loop tick that
// sent a request, from when it was due on the fleet's scheduler to when its first request was ready.
type SendLag struct {
	Ticks float64 `json:"ticks"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
}

// Requests is one line of apiserver_request_total.
type Requests struct {
	Verb        string  `json:"verb"`
	Resource    string  `json:"resource"`
	Subresource string  `json:"subresource,omitempty"`
	Code        string  `json:"code"`
	Count       float64 `json:"count"`
	Rate        float64 `json:"rate"`
}

// Latency is the quantiles of one latency histogram, in seconds.
type Latency struct {
	Verb        string  `json:"verb"`
	Resource    string  `json:"resource"`
	Subresource string  `json:"subresource,omitempty"`
	Count       float64 `json:"count"`
	P50         float64 `json:"p50"`
	P90         float64 `json:"p90"`
	P99         float64 `json:"p99"`
}

// Bytes is the size of requests or responses of one kind.
type Bytes struct {
	Verb        string  `json:"verb"`
	Resource    string  `json:"resource"`
	Subresource string  `json:"subresource,omitempty"`
	Count       float64 `json:"count"`
	Bytes       float64 `json:"bytes"`
	Rate        float64 `json:"rate"` // bytes per second
}

// PriorityLevel is API Priority and Fairness for one priority level.
type PriorityLevel struct {
	Name       string  `json:"name"`
	Dispatched float64 `json:"dispatched"`
	Rejected   float64 `json:"rejected"`
	// WaitP50 and WaitP99 are the queue wait of dispatched requests, in seconds.
	WaitP50 float64 `json:"waitP50"`
	WaitP99 float64 `json:"waitP99"`
}

// Watch is the watch events the apiserver sent for one resource.
type Watch struct {
	Resource   string  `json:"resource"`
	Events     float64 `json:"events"`
	Bytes      float64 `json:"bytes"`
	EventsRate float64 `json:"eventsRate"`
	BytesRate  float64 `json:"bytesRate"`
}

// Process is one component's CPU and memory over the window.
type Process struct {
	Component  string  `json:"component"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// CPUCores is CPUSeconds over the window's length: the average number of cores busy.
	CPUCores float64 `json:"cpuCores"`
	// MemoryBytes is the resident memory at the end, MaxMemoryBytes the most seen in the window.
	MemoryBytes    float64 `json:"memoryBytes"`
	MaxMemoryBytes float64 `json:"maxMemoryBytes"`
}

// EtcdLoad is what etcd stored and wrote.
type EtcdLoad struct {
	DBSizeStart float64 `json:"dbSizeStart"`
	DBSizeEnd   float64 `json:"dbSizeEnd"`
	// DBGrowth is DBSizeEnd - DBSizeStart: etcd_mvcc_db_total_size_in_bytes only grows until a
	// defragmentation, so it shows what the history of the run costs.
	DBGrowth    float64 `json:"dbGrowth"`
	DBInUseEnd  float64 `json:"dbInUseEnd"`
	WALBytes    float64 `json:"walBytes"`
	WALRate     float64 `json:"walRate"` // bytes per second
	Puts        float64 `json:"puts"`
	ClientBytes float64 `json:"clientBytes"` // gRPC bytes received from clients (the apiserver)
	FsyncP99    float64 `json:"fsyncP99"`
	CommitP99   float64 `json:"commitP99"`
}

// NodeCollector is the node lifecycle controller's view.
type NodeCollector struct {
	Zones []Zone `json:"zones,omitempty"`
	// UpdateAllNodesHealthP99 is the p99 of one pass over every node's health, in seconds.
	UpdateAllNodesHealthP99  float64 `json:"updateAllNodesHealthP99"`
	UpdateAllNodesHealthRuns float64 `json:"updateAllNodesHealthRuns"`
}

// Zone is the controller's view of one zone.
type Zone struct {
	Zone string `json:"zone"`
	// HealthMin is the lowest node_collector_zone_health seen (100: every node Ready).
	HealthMin float64 `json:"healthMin"`
	// UnhealthyMax is the most node_collector_unhealthy_nodes_in_zone seen.
	UnhealthyMax float64 `json:"unhealthyMax"`
	Evictions    float64 `json:"evictions"`
}

// FleetRequests is the fleet's own view of one kind of request.
type FleetRequests struct {
	Verb     string  `json:"verb"`
	Resource string  `json:"resource"`
	OK       float64 `json:"ok"`
	Errors   float64 `json:"errors"`
	Rate     float64 `json:"rate"`
	P50      float64 `json:"p50"`
	P99      float64 `json:"p99"`
	// RequestBytes and ResponseBytes are the body bytes sent and received in the window.
	RequestBytes  float64 `json:"requestBytes"`
	ResponseBytes float64 `json:"responseBytes"`
}

// Compute returns the load of each window.
func Compute(snaps []scrape.Snapshot, windows []Window) []Phase {
	byComponent := map[string][]*scrape.Snapshot{}
	for _, c := range []string{APIServer, Etcd, ControllerManager, Scheduler, Fleet} {
		byComponent[c] = component(snaps, c)
	}
	out := make([]Phase, 0, len(windows))
	for _, w := range windows {
		out = append(out, computePhase(byComponent, w))
	}
	return out
}

func computePhase(byComponent map[string][]*scrape.Snapshot, w Window) Phase {
	p := Phase{Name: w.Name, Start: w.Start, End: w.End}
	api := window(byComponent[APIServer], w.Start, w.End)
	if len(api) >= 2 {
		p.Seconds = api[len(api)-1].At.Sub(api[0].At).Seconds()
	}
	rate := func(x float64) float64 {
		if p.Seconds <= 0 {
			return 0
		}
		return x / p.Seconds
	}
	if f := Delta(api, "apiserver_request_total"); f != nil {
		for _, s := range sortedSeries(f) {
			if s.Value > 0 {
				p.Requests = append(p.Requests, Requests{Verb: s.Labels[0], Resource: s.Labels[1], Subresource: s.Labels[2], Code: s.Labels[3], Count: s.Value, Rate: rate(s.Value)})
			}
		}
		sort.SliceStable(p.Requests, func(i, j int) bool {
			return p.Requests[i].Count > p.Requests[j].Count || p.Requests[i].Count == p.Requests[j].Count && keyLess(p.Requests[i], p.Requests[j])
		})
	}
	p.Latency = latencies(Delta(api, "apiserver_request_duration_seconds"), true)
	p.RequestBytes = bytesOf(Delta(api, "apiserver_request_body_size_bytes"), rate)
	p.ResponseBytes = bytesOf(Delta(api, "apiserver_response_sizes"), rate)
	p.PriorityLevels = priorityLevels(api)
	p.Watch = watches(api, rate)
	p.EtcdLatency = latencies(Delta(api, "etcd_request_duration_seconds"), false)
	for _, c := range []string{APIServer, Etcd, ControllerManager, Scheduler, Fleet} {
		if pr, ok := process(c, window(byComponent[c], w.Start, w.End)); ok {
			p.Processes = append(p.Processes, pr)
		}
	}
	p.Etcd = etcdLoad(window(byComponent[Etcd], w.Start, w.End))
	p.NodeCollector = nodeCollector(window(byComponent[ControllerManager], w.Start, w.End))
	p.Fleet = fleetRequests(window(byComponent[Fleet], w.Start, w.End))
	p.SendLag = sendLag(window(byComponent[Fleet], w.Start, w.End))
	p.FleetWatches = fleetWatches(window(byComponent[Fleet], w.Start, w.End), rate)
	return p
}

// sortedSeries returns a family's series in order of their keys, so that equal counts sort the same
// way in every report.
func sortedSeries(f *scrape.Family) []*scrape.Series {
	out := make([]*scrape.Series, 0, len(f.Series))
	for _, k := range slices.Sorted(maps.Keys(f.Series)) {
		out = append(out, f.Series[k])
	}
	return out
}
