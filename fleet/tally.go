package fleet

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/heartbeat"
)

// Tally is the fleet's one record of what its agents send: requests by verb, resource and HTTP code
// with their latencies and body bytes, heartbeats, lease renewal intervals and 429s on the wire. The
// summary, the Prometheus metrics (package metrics) and the report's fleet view (package scrape) all
// read it; nothing else counts on the heartbeat path. A request of a known verb, resource and code
// lands in a fixed array of atomics and allocates nothing; others go to a map under a lock.
type Tally struct {
	cells [len(knownVerbs)][len(knownResources)][len(knownCodes)]cell

	mu    sync.Mutex
	extra map[[3]string]*cell // verb, resource, code outside the known ones

	heartbeats [2][2]atomic.Int64 // [lease, status][ok, failed]
	renewals   atomic.Int64
	intervals  histogram // between a node's successive renewals
	sendLag    histogram // from a loop tick's due time to its first request
	throttled  atomic.Int64
	watches    watchTally // the agents' watches (watch_tally.go)
}

// cell is one verb, resource and code.
type cell struct {
	failed                  atomic.Int64 // of latency.count, those the kubelet counts as failures
	requestBytes, respBytes atomic.Int64
	latency                 histogram
}

// histogram counts observations into buckets: counts[i] holds those at most bounds[i] and above the
// bound before it; the last count is above every bound.
type histogram struct {
	bounds []float64 // seconds, shared, read-only
	counts []atomic.Int64
	count  atomic.Int64
	nanos  atomic.Int64
}

func (h *histogram) init(bounds []float64) {
	h.bounds, h.counts = bounds, make([]atomic.Int64, len(bounds)+1)
}

func (h *histogram) observe(d time.Duration) {
	secs := d.Seconds()
	i, _ := slices.BinarySearch(h.bounds, secs) // first bound >= secs
	h.counts[i].Add(1)
	h.nanos.Add(int64(d))
	h.count.Add(1)
}

// Histogram is a snapshot of a histogram, in Prometheus's terms.
type Histogram struct {
	Bounds     []float64 // upper bounds in seconds, increasing; +Inf is implied
	Cumulative []uint64  // observations at most each bound
	Count      uint64
	Sum        float64 // seconds
}

func (h *histogram) snapshot() Histogram {
	s := Histogram{Bounds: h.bounds, Cumulative: make([]uint64, len(h.bounds))}
	var cum uint64
	for i := range h.bounds {
		cum += uint64(h.counts[i].Load())
		s.Cumulative[i] = cum
	}
	s.Count = cum + uint64(h.counts[len(h.bounds)].Load())
	s.Sum = time.Duration(h.nanos.Load()).Seconds()
	return s
}

// The label values the tally indexes without a lookup. Verbs and resources are the agent's own names
// (agent.Request); codes are HTTP status codes, plus CodeTimeout and CodeError for requests that got
// no HTTP answer.
var (
	knownVerbs     = [...]string{"get", "list", "watch", "create", "update", "patch", "delete"}
	knownResources = [...]string{"nodes", "leases", "pods"}
	knownCodes     = [...]string{"200", "201", "400", "401", "403", "404", "409", "422", "429", "500", "503", "504", CodeTimeout, CodeError}
)

// Code values of requests without an HTTP status.
const (
	// CodeTimeout: no answer before the client timeout (or a partitioned node's simulated one).
	CodeTimeout = "timeout"
	// CodeError: the request failed without an HTTP status, for example a refused connection.
	CodeError = "error"
)

// RequestBuckets are the upper bounds of the request latency histograms, in seconds: a heartbeat to
// a local apiserver takes about a millisecond, and the kubelet's heartbeat client gives up at 10 s.
var RequestBuckets = []float64{0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1, 2, 4, 8, 10, 15}

// SendLagBuckets are the upper bounds of the send lag histogram, in seconds: a fleet that keeps up
// sends within a coalescing step of the due time (milliseconds); past a second the fleet, not the
// control plane, is what delays its heartbeats, and past the lease duration a node expires.
var SendLagBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40}

// renewalRatios are the lease renewal interval buckets as multiples of the renew interval: every
// half percent from 1.0 to 1.06, where a kubelet's intervals fall (jitter up to 4%, plus the request),
// and coarse steps out to the lease duration (4 renew intervals), past which the node has expired.
var renewalRatios = []float64{
	0.5, 0.9, 0.95, 0.99, 1, 1.005, 1.01, 1.015, 1.02, 1.025, 1.03, 1.035, 1.04, 1.045, 1.05, 1.055,
	1.06, 1.08, 1.1, 1.2, 1.5, 2, 3, 4,
}

// RenewalBuckets returns the upper bounds, in seconds, of the lease renewal interval histogram for a
// renew interval: for 10 s, 5, 9, 9.5, 9.9, 10, 10.05, ... 10.6, 10.8, 11, 12, 15, 20, 30 and 40.
func RenewalBuckets(renewInterval time.Duration) []float64 {
	b := make([]float64, len(renewalRatios))
	for i, r := range renewalRatios {
		b[i] = math.Round(r*renewInterval.Seconds()*1000) / 1000 // to the millisecond: 10.05, not 10.049999
	}
	return b
}

// NewTally returns an empty tally whose renewal interval histogram has fine buckets around
// renewInterval (0 means the kubelet's 10 s).
func NewTally(renewInterval time.Duration) *Tally {
	if renewInterval <= 0 {
		renewInterval = heartbeat.RenewInterval(heartbeat.DefaultLeaseDurationSeconds)
	}
	t := &Tally{extra: map[[3]string]*cell{}}
	for v := range t.cells {
		for r := range t.cells[v] {
			for c := range t.cells[v][r] {
				t.cells[v][r][c].latency.init(RequestBuckets)
			}
		}
	}
	t.intervals.init(RenewalBuckets(renewInterval))
	t.sendLag.init(SendLagBuckets)
	return t
}

// Request implements agent.Recorder.
func (t *Tally) Request(req agent.Request) {
	codeIndex, code := Classify(req.Verb, req.Err)
	c := t.cell(req.Verb, req.Resource, codeIndex, code)
	if failed(req.Err) {
		c.failed.Add(1)
	}
	if req.RequestBytes > 0 {
		c.requestBytes.Add(req.RequestBytes)
	}
	if req.ResponseBytes > 0 {
		c.respBytes.Add(req.ResponseBytes)
	}
	c.latency.observe(req.Latency)
	if !req.Due.IsZero() {
		t.sendLag.observe(req.SendLag)
	}
}

func (t *Tally) cell(verb, resource string, codeIndex int, code string) *cell {
	v, r := index(knownVerbs[:], verb), index(knownResources[:], resource)
	if v >= 0 && r >= 0 && codeIndex >= 0 {
		return &t.cells[v][r][codeIndex]
	}
	key := [3]string{verb, resource, code}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.extra[key]
	if c == nil {
		c = &cell{}
		c.latency.init(RequestBuckets)
		t.extra[key] = c
	}
	return c
}

func index(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// failed tells a failure from success and from the not found and already exists answers a kubelet
// expects (no lease yet, a node registered before).
func failed(err error) bool {
	if err == nil {
		return false
	}
	if s, ok := err.(apierrors.APIStatus); ok { // the usual case, without errors.As's allocations
		st := s.Status()
		switch st.Reason {
		case metav1.StatusReasonNotFound, metav1.StatusReasonAlreadyExists:
			return false
		case metav1.StatusReasonUnknown:
			return st.Code != http.StatusNotFound // as apierrors.IsNotFound reads a reasonless 404
		}
		return true
	}
	return !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err)
}

func outcome(err error) int {
	if failed(err) {
		return 1
	}
	return 0
}

// Heartbeat implements agent.Recorder.
func (t *Tally) Heartbeat(kind string, err error) {
	k := 0
	if kind == agent.KindStatus {
		k = 1
	}
	t.heartbeats[k][outcome(err)].Add(1)
}

// LeaseRenewed implements agent.Recorder. A node's first renewal has no interval and is not observed.
func (t *Tally) LeaseRenewed(interval time.Duration) {
	t.renewals.Add(1)
	if interval > 0 {
		t.intervals.observe(interval)
	}
}

// RequestSeries is the tally of one verb, resource and code.
type RequestSeries struct {
	Verb, Resource, Code        string
	Count, Failed               int64
	RequestBytes, ResponseBytes int64
	Latency                     Histogram
}

// Series returns the tally of each verb, resource and code that happened, sorted by those.
func (t *Tally) Series() []RequestSeries {
	var out []RequestSeries
	add := func(verb, resource, code string, c *cell) {
		if c.latency.count.Load() == 0 {
			return
		}
		h := c.latency.snapshot()
		out = append(out, RequestSeries{Verb: verb, Resource: resource, Code: code, Count: int64(h.Count),
			Failed: c.failed.Load(), RequestBytes: c.requestBytes.Load(), ResponseBytes: c.respBytes.Load(), Latency: h})
	}
	for v, verb := range knownVerbs {
		for r, res := range knownResources {
			for k, code := range knownCodes {
				add(verb, res, code, &t.cells[v][r][k])
			}
		}
	}
	t.mu.Lock()
	for k, c := range t.extra {
		add(k[0], k[1], k[2], c)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b RequestSeries) int {
		return cmp.Or(cmp.Compare(a.Verb, b.Verb), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Code, b.Code))
	})
	return out
}

// Count is the tally of one verb and resource, every code together.
type Count struct {
	Verb, Resource              string
	OK, Failed                  int64 // OK includes not found and already exists
	RequestBytes, ResponseBytes int64
}

// Requests returns the tally of each verb and resource that happened.
func (t *Tally) Requests() []Count {
	var out []Count
	for _, s := range t.Series() {
		if n := len(out); n > 0 && out[n-1].Verb == s.Verb && out[n-1].Resource == s.Resource {
			c := &out[n-1]
			c.OK += s.Count - s.Failed
			c.Failed += s.Failed
			c.RequestBytes += s.RequestBytes
			c.ResponseBytes += s.ResponseBytes
			continue
		}
		out = append(out, Count{Verb: s.Verb, Resource: s.Resource, OK: s.Count - s.Failed, Failed: s.Failed,
			RequestBytes: s.RequestBytes, ResponseBytes: s.ResponseBytes})
	}
	return out
}

// Heartbeats returns the heartbeat attempts of kind (agent.KindLease or agent.KindStatus).
func (t *Tally) Heartbeats(kind string) (ok, failed int64) {
	k := 0
	if kind == agent.KindStatus {
		k = 1
	}
	return t.heartbeats[k][0].Load(), t.heartbeats[k][1].Load()
}

// Renewals returns the successful lease renewals and the histogram of the intervals between a node's
// successive ones.
func (t *Tally) Renewals() (int64, Histogram) { return t.renewals.Load(), t.intervals.snapshot() }

// SendLag returns the histogram of the send lag: for each loop tick that sent a request, the time
// from when the tick was due on the fleet's scheduler to when its first request was ready to go.
func (t *Tally) SendLag() Histogram { return t.sendLag.snapshot() }

// Throttled returns how many 429 Too Many Requests answers the agents' clients received, those that
// client-go retried after the server's Retry-After included. Zero for a fleet on given clients.
func (t *Tally) Throttled() int64 { return t.throttled.Load() }

// throttledCounter is where the agents' transport counts 429s (transport.SharedClients): nil, counting
// none, for a nil t.
func (t *Tally) throttledCounter() *atomic.Int64 {
	if t == nil {
		return nil
	}
	return &t.throttled
}

// Errors returns how many requests failed.
func (t *Tally) Errors() int64 {
	var n int64
	for _, c := range t.Requests() {
		n += c.Failed
	}
	return n
}
