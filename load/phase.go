package load

import (
	"math"
	"sort"
	"time"

	"fakelet.dev/fakelet/scrape"
)

// Component names, as the local control plane and FleetSource name them.
const (
	APIServer         = "kube-apiserver"
	Etcd              = "etcd"
	ControllerManager = "kube-controller-manager"
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
}

// Compute returns the load of each window.
func Compute(snaps []scrape.Snapshot, windows []Window) []Phase {
	byComponent := map[string][]*scrape.Snapshot{}
	for _, c := range []string{APIServer, Etcd, ControllerManager, Fleet} {
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
	for _, c := range []string{APIServer, Etcd, ControllerManager, Fleet} {
		if pr, ok := process(c, window(byComponent[c], w.Start, w.End)); ok {
			p.Processes = append(p.Processes, pr)
		}
	}
	p.Etcd = etcdLoad(window(byComponent[Etcd], w.Start, w.End))
	p.NodeCollector = nodeCollector(window(byComponent[ControllerManager], w.Start, w.End))
	p.Fleet = fleetRequests(window(byComponent[Fleet], w.Start, w.End))
	return p
}

func keyLess(a, b Requests) bool {
	if a.Verb != b.Verb {
		return a.Verb < b.Verb
	}
	if a.Resource != b.Resource {
		return a.Resource < b.Resource
	}
	if a.Subresource != b.Subresource {
		return a.Subresource < b.Subresource
	}
	return a.Code < b.Code
}

// q is Quantile with 0 for an empty histogram: JSON has no NaN, and Count says it was empty.
func q(quant float64, s *scrape.Series) float64 {
	v := Quantile(quant, s.Bounds, s.Buckets)
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// latencies turns a latency histogram family into rows by its first three labels (or two), busiest
// first; with all, WATCH and CONNECT are left out and a row "*" sums the rest.
func latencies(f *scrape.Family, all bool) []Latency {
	if f == nil {
		return nil
	}
	var out []Latency
	var total *scrape.Series
	for _, s := range sortedSeries(f) {
		if s.Value <= 0 {
			continue
		}
		l := Latency{Verb: s.Labels[0], Resource: s.Labels[1], Count: s.Value, P50: q(0.5, s), P90: q(0.9, s), P99: q(0.99, s)}
		if len(s.Labels) > 2 {
			l.Subresource = s.Labels[2]
		}
		if all {
			if l.Verb == "WATCH" || l.Verb == "CONNECT" {
				continue
			}
			total = sumInto(total, s)
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	if total != nil {
		out = append([]Latency{{Verb: "*", Resource: "*", Count: total.Value, P50: q(0.5, total), P90: q(0.9, total), P99: q(0.99, total)}}, out...)
	}
	return out
}

// sumInto adds histogram s into acc (nil: a new one); series of other buckets are left out.
func sumInto(acc, s *scrape.Series) *scrape.Series {
	if acc == nil {
		return &scrape.Series{Value: s.Value, Sum: s.Sum, Bounds: s.Bounds, Buckets: append([]float64(nil), s.Buckets...)}
	}
	if len(acc.Bounds) != len(s.Bounds) {
		return acc
	}
	for i, b := range acc.Bounds {
		if s.Bounds[i] != b {
			return acc
		}
	}
	acc.Value += s.Value
	acc.Sum += s.Sum
	for i := range s.Buckets {
		acc.Buckets[i] += s.Buckets[i]
	}
	return acc
}

func bytesOf(f *scrape.Family, rate func(float64) float64) []Bytes {
	if f == nil {
		return nil
	}
	var out []Bytes
	for _, s := range sortedSeries(f) {
		if s.Value <= 0 {
			continue
		}
		b := Bytes{Verb: s.Labels[0], Resource: s.Labels[1], Count: s.Value, Bytes: s.Sum, Rate: rate(s.Sum)}
		if len(s.Labels) > 2 {
			b.Subresource = s.Labels[2]
		}
		out = append(out, b)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out
}

func priorityLevels(api []*scrape.Snapshot) []PriorityLevel {
	levels := map[string]*PriorityLevel{}
	get := func(name string) *PriorityLevel {
		if levels[name] == nil {
			levels[name] = &PriorityLevel{Name: name}
		}
		return levels[name]
	}
	if f := Delta(api, "apiserver_flowcontrol_dispatched_requests_total"); f != nil {
		for _, s := range sortedSeries(f) {
			get(s.Labels[0]).Dispatched += s.Value
		}
	}
	if f := Delta(api, "apiserver_flowcontrol_rejected_requests_total"); f != nil {
		for _, s := range sortedSeries(f) {
			get(s.Labels[0]).Rejected += s.Value
		}
	}
	if f := Delta(api, "apiserver_flowcontrol_request_wait_duration_seconds"); f != nil {
		for _, s := range sortedSeries(f) {
			if s.Labels[1] == "true" && s.Value > 0 {
				pl := get(s.Labels[0])
				pl.WaitP50, pl.WaitP99 = q(0.5, s), q(0.99, s)
			}
		}
	}
	var out []PriorityLevel
	for _, name := range sortedKeys(levels) {
		pl := levels[name]
		if pl.Dispatched+pl.Rejected > 0 {
			out = append(out, *pl)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Dispatched > out[j].Dispatched })
	return out
}

func watches(api []*scrape.Snapshot, rate func(float64) float64) []Watch {
	events, sizes := Delta(api, "apiserver_watch_events_total"), Delta(api, "apiserver_watch_events_sizes")
	if events == nil {
		return nil
	}
	var out []Watch
	for _, s := range sortedSeries(events) {
		key := scrape.Key(s.Labels...)
		if s.Value <= 0 {
			continue
		}
		w := Watch{Resource: s.Labels[0], Events: s.Value, EventsRate: rate(s.Value)}
		if sizes != nil && sizes.Series[key] != nil {
			w.Bytes = sizes.Series[key].Sum
			w.BytesRate = rate(w.Bytes)
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Events > out[j].Events })
	return out
}

func process(name string, snaps []*scrape.Snapshot) (Process, bool) {
	if len(snaps) < 2 {
		return Process{}, false
	}
	p := Process{Component: name}
	var cpu []float64
	for _, s := range snaps {
		if v, ok := s.Value("process_cpu_seconds_total"); ok {
			cpu = append(cpu, v)
		}
		if v, ok := s.Value("process_resident_memory_bytes"); ok {
			p.MemoryBytes = v
			p.MaxMemoryBytes = max(p.MaxMemoryBytes, v)
		}
	}
	if len(cpu) == 0 {
		return Process{}, false
	}
	p.CPUSeconds = Increase(cpu)
	if secs := snaps[len(snaps)-1].At.Sub(snaps[0].At).Seconds(); secs > 0 {
		p.CPUCores = p.CPUSeconds / secs
	}
	return p, true
}

func etcdLoad(snaps []*scrape.Snapshot) *EtcdLoad {
	if len(snaps) < 2 {
		return nil
	}
	e := &EtcdLoad{}
	first, last := snaps[0], snaps[len(snaps)-1]
	e.DBSizeStart, _ = first.Value("etcd_mvcc_db_total_size_in_bytes")
	e.DBSizeEnd, _ = last.Value("etcd_mvcc_db_total_size_in_bytes")
	e.DBGrowth = e.DBSizeEnd - e.DBSizeStart
	e.DBInUseEnd, _ = last.Value("etcd_mvcc_db_total_size_in_use_in_bytes")
	e.WALBytes = counterIncrease(snaps, "etcd_disk_wal_write_bytes_total")
	if secs := last.At.Sub(first.At).Seconds(); secs > 0 {
		e.WALRate = e.WALBytes / secs
	}
	e.Puts = counterIncrease(snaps, "etcd_mvcc_put_total")
	e.ClientBytes = counterIncrease(snaps, "etcd_network_client_grpc_received_bytes_total")
	if f := Delta(snaps, "etcd_disk_wal_fsync_duration_seconds"); f != nil && f.Series[""] != nil {
		e.FsyncP99 = q(0.99, f.Series[""])
	}
	if f := Delta(snaps, "etcd_disk_backend_commit_duration_seconds"); f != nil && f.Series[""] != nil {
		e.CommitP99 = q(0.99, f.Series[""])
	}
	return e
}

// counterIncrease is the increase of an unlabelled counter.
func counterIncrease(snaps []*scrape.Snapshot, name string) float64 {
	if f := Delta(snaps, name); f != nil && f.Series[""] != nil {
		return f.Series[""].Value
	}
	return 0
}

func nodeCollector(snaps []*scrape.Snapshot) *NodeCollector {
	if len(snaps) < 2 {
		return nil
	}
	nc := &NodeCollector{}
	zones := map[string]*Zone{}
	get := func(z string) *Zone {
		if zones[z] == nil {
			zones[z] = &Zone{Zone: z, HealthMin: math.Inf(1)}
		}
		return zones[z]
	}
	for _, s := range snaps {
		if f := s.Families["node_collector_zone_health"]; f != nil {
			for _, sr := range f.Series {
				z := get(sr.Labels[0])
				z.HealthMin = min(z.HealthMin, sr.Value)
			}
		}
		if f := s.Families["node_collector_unhealthy_nodes_in_zone"]; f != nil {
			for _, sr := range f.Series {
				z := get(sr.Labels[0])
				z.UnhealthyMax = max(z.UnhealthyMax, sr.Value)
			}
		}
	}
	if f := Delta(snaps, "node_collector_evictions_total"); f != nil {
		for _, sr := range f.Series {
			get(sr.Labels[0]).Evictions += sr.Value
		}
	}
	for _, name := range sortedKeys(zones) {
		z := zones[name]
		if math.IsInf(z.HealthMin, 1) {
			z.HealthMin = 0
		}
		nc.Zones = append(nc.Zones, *z)
	}
	sort.SliceStable(nc.Zones, func(i, j int) bool { return nc.Zones[i].Zone < nc.Zones[j].Zone })
	if f := Delta(snaps, "node_collector_update_all_nodes_health_duration_seconds"); f != nil && f.Series[""] != nil {
		nc.UpdateAllNodesHealthP99 = q(0.99, f.Series[""])
		nc.UpdateAllNodesHealthRuns = f.Series[""].Value
	}
	return nc
}

func fleetRequests(snaps []*scrape.Snapshot) []FleetRequests {
	reqs := Delta(snaps, scrape.FleetRequests)
	if reqs == nil {
		return nil
	}
	dur := Delta(snaps, scrape.FleetRequestDuration)
	rows := map[string]*FleetRequests{}
	for _, s := range sortedSeries(reqs) {
		k := scrape.Key(s.Labels[0], s.Labels[1])
		r := rows[k]
		if r == nil {
			r = &FleetRequests{Verb: s.Labels[0], Resource: s.Labels[1]}
			rows[k] = r
		}
		if s.Labels[2] == "ok" {
			r.OK += s.Value
		} else {
			r.Errors += s.Value
		}
	}
	secs := 0.0
	if len(snaps) >= 2 {
		secs = snaps[len(snaps)-1].At.Sub(snaps[0].At).Seconds()
	}
	var out []FleetRequests
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := rows[k]
		if r.OK+r.Errors == 0 {
			continue
		}
		if secs > 0 {
			r.Rate = (r.OK + r.Errors) / secs
		}
		if dur != nil && dur.Series[k] != nil {
			r.P50, r.P99 = q(0.5, dur.Series[k]), q(0.99, dur.Series[k])
		}
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].OK+out[i].Errors > out[j].OK+out[j].Errors })
	return out
}

// sortedSeries returns a family's series in order of their keys, so that equal counts sort the same
// way in every report.
func sortedSeries(f *scrape.Family) []*scrape.Series {
	out := make([]*scrape.Series, 0, len(f.Series))
	for _, k := range sortedKeys(f.Series) {
		out = append(out, f.Series[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
