package fleet

import (
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"time"

	"fakelet.dev/fakelet/agent"
)

// Tally counts what the fleet's agents send, cheaply enough for the heartbeat path: fixed arrays of
// atomics indexed by verb and resource.
type Tally struct {
	requests   [len(verbs)][len(resources)][2]atomic.Int64 // [verb][resource][ok, failed]
	heartbeats [2][2]atomic.Int64                          // [lease, status][ok, failed]
	renewals   atomic.Int64
	throttled  atomic.Int64 // 429 answers on the wire, retried ones included
}

var (
	verbs     = [...]string{"get", "create", "update", "patch", "delete", "other"}
	resources = [...]string{"nodes", "leases", "other"}
)

func newTally() *Tally { return &Tally{} }

func index[T ~string](list []T, s T) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return len(list) - 1
}

// outcome is 1 for a failure. Not found and already exists are answers a kubelet expects (no lease
// yet, a node registered before), not failures.
func outcome(err error) int {
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
		return 0
	}
	return 1
}

// Request implements agent.Recorder.
func (t *Tally) Request(verb, resource string, err error, _ time.Duration) {
	t.requests[index(verbs[:], verb)][index(resources[:], resource)][outcome(err)].Add(1)
}

// Heartbeat implements agent.Recorder.
func (t *Tally) Heartbeat(kind string, err error) {
	k := 0
	if kind == agent.KindStatus {
		k = 1
	}
	t.heartbeats[k][outcome(err)].Add(1)
}

// LeaseRenewed implements agent.Recorder.
func (t *Tally) LeaseRenewed(time.Duration) { t.renewals.Add(1) }

// Count is one line of a tally.
type Count struct {
	Verb, Resource string
	OK, Failed     int64
}

// Requests returns the request counts that are not zero.
func (t *Tally) Requests() []Count {
	var out []Count
	for v := range verbs {
		for r := range resources {
			ok, failed := t.requests[v][r][0].Load(), t.requests[v][r][1].Load()
			if ok+failed > 0 {
				out = append(out, Count{Verb: verbs[v], Resource: resources[r], OK: ok, Failed: failed})
			}
		}
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

// Throttled returns how many 429 Too Many Requests answers the agents' clients received, those that
// client-go retried after the server's Retry-After included. Zero for a fleet on given clients.
func (t *Tally) Throttled() int64 { return t.throttled.Load() }

// Errors returns how many requests failed.
func (t *Tally) Errors() int64 {
	var n int64
	for _, c := range t.Requests() {
		n += c.Failed
	}
	return n
}
