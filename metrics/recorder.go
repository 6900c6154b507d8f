package metrics

import (
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"fakelet.dev/fakelet/agent"
)

// Recorder is the agent.Recorder behind the request, heartbeat and lease renewal metrics. It is on
// every agent's heartbeat path, from many goroutines at once: a call for a known verb, resource and
// code finds its histogram in a fixed array and allocates nothing. Other values work too, through
// the slower labelled lookup.
type Recorder struct {
	requests   *prometheus.HistogramVec
	heartbeats *prometheus.CounterVec
	intervals  prometheus.Histogram

	// observers caches each known verb, resource and code's child of requests, created on first
	// use so that only combinations that happened are exposed.
	observers [len(knownVerbs)][len(knownResources)][len(knownCodes)]atomic.Pointer[observer]
	beats     [len(knownKinds)][2]prometheus.Counter // [kind][success, failure]
}

var _ agent.Recorder = (*Recorder)(nil)

type observer struct{ prometheus.Observer }

// The label values the recorder resolves without a lookup. Verbs and resources are the agent's own
// names (agent.Recorder); codes are HTTP status codes, plus CodeTimeout and CodeError for requests
// that got no HTTP answer.
var (
	knownVerbs     = [...]string{"get", "list", "watch", "create", "update", "patch", "delete"}
	knownResources = [...]string{"nodes", "leases", "pods"}
	knownCodes     = [...]string{"200", "201", "400", "401", "403", "404", "409", "422", "429", "500", "503", "504", CodeTimeout, CodeError}
	knownKinds     = [...]string{agent.KindLease, agent.KindStatus}
)

// Code label values of requests without an HTTP status.
const (
	// CodeTimeout: no answer before the client timeout (or a partitioned node's simulated one).
	CodeTimeout = "timeout"
	// CodeError: the request failed without an HTTP status, for example a refused connection.
	CodeError = "error"
)

// Heartbeat result label values.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

// RequestBuckets are the upper bounds of the request duration histogram, in seconds: a heartbeat to
// a local apiserver takes about a millisecond, and the kubelet's heartbeat client gives up at 10 s.
var RequestBuckets = []float64{0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1, 2, 4, 8, 10, 15}

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

func newRecorder(renewInterval time.Duration) *Recorder {
	r := &Recorder{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "request_duration_seconds",
			Help:    "Duration of the fleet's API requests, by verb and resource as the agent names them and HTTP status code (\"timeout\" or \"error\" without one).",
			Buckets: RequestBuckets,
		}, []string{"verb", "resource", "code"}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "heartbeats_total",
			Help: "Heartbeat attempts of the fleet's nodes by kind (lease renewal or status patch) and result.",
		}, []string{"kind", "result"}),
		intervals: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "lease_renewal_interval_seconds",
			Help:    "Time between a node's successive successful lease renewals; a kubelet's is 1.00-1.04 renew intervals plus one request.",
			Buckets: RenewalBuckets(renewInterval),
		}),
	}
	for k, kind := range knownKinds {
		r.beats[k][0] = r.heartbeats.WithLabelValues(kind, ResultSuccess)
		r.beats[k][1] = r.heartbeats.WithLabelValues(kind, ResultFailure)
	}
	return r
}

// Request implements agent.Recorder.
func (r *Recorder) Request(verb, resource string, err error, latency time.Duration) {
	codeIndex, code := classify(verb, err)
	v, res := verbIndex(verb), resourceIndex(resource)
	if v < 0 || res < 0 || codeIndex < 0 {
		r.requests.WithLabelValues(verb, resource, code).Observe(latency.Seconds())
		return
	}
	slot := &r.observers[v][res][codeIndex]
	o := slot.Load()
	if o == nil {
		// Two goroutines may both get here: WithLabelValues hands both the same child.
		o = &observer{r.requests.WithLabelValues(verb, resource, code)}
		slot.Store(o)
	}
	o.Observe(latency.Seconds())
}

// Heartbeat implements agent.Recorder.
func (r *Recorder) Heartbeat(kind string, err error) {
	result := 0
	if err != nil {
		result = 1
	}
	switch kind {
	case agent.KindLease:
		r.beats[0][result].Inc()
	case agent.KindStatus:
		r.beats[1][result].Inc()
	default:
		r.heartbeats.WithLabelValues(kind, [...]string{ResultSuccess, ResultFailure}[result]).Inc()
	}
}

// LeaseRenewed implements agent.Recorder. A node's first renewal has no interval and is not observed.
func (r *Recorder) LeaseRenewed(interval time.Duration) {
	if interval > 0 {
		r.intervals.Observe(interval.Seconds())
	}
}

func verbIndex(verb string) int {
	switch verb {
	case "get":
		return 0
	case "list":
		return 1
	case "watch":
		return 2
	case "create":
		return 3
	case "update":
		return 4
	case "patch":
		return 5
	case "delete":
		return 6
	}
	return -1
}

func resourceIndex(resource string) int {
	switch resource {
	case "nodes":
		return 0
	case "leases":
		return 1
	case "pods":
		return 2
	}
	return -1
}

// classify returns a request's code label and its index in knownCodes (-1 if not there). A success
// has no status to read (client-go returns only the object), so it is labelled as the apiserver
// labels it: 201 for a create, 200 otherwise.
func classify(verb string, err error) (int, string) {
	if err == nil {
		if verb == "create" {
			return 1, "201"
		}
		return 0, "200"
	}
	if status, ok := err.(apierrors.APIStatus); ok { // the usual case, without errors.As's allocation
		return httpCode(status.Status().Code)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return httpCode(status.Status().Code)
	}
	var netErr net.Error
	if errors.Is(err, agent.ErrPartitioned) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &netErr) && netErr.Timeout()) {
		return len(knownCodes) - 2, CodeTimeout
	}
	return len(knownCodes) - 1, CodeError
}

func httpCode(code int32) (int, string) {
	switch code {
	case 200:
		return 0, "200"
	case 201:
		return 1, "201"
	case 400:
		return 2, "400"
	case 401:
		return 3, "401"
	case 403:
		return 4, "403"
	case 404:
		return 5, "404"
	case 409:
		return 6, "409"
	case 422:
		return 7, "422"
	case 429:
		return 8, "429"
	case 500:
		return 9, "500"
	case 503:
		return 10, "503"
	case 504:
		return 11, "504"
	case 0:
		return len(knownCodes) - 1, CodeError // a Status without a code: not an HTTP answer
	}
	return -1, strconv.Itoa(int(code))
}
