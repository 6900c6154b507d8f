package agent

import (
	"sync/atomic"
	"time"
)

// Heartbeat kinds, as recorded.
const (
	KindLease  = "lease"
	KindStatus = "status"
)

// Recorder receives what agents do. Its methods are called from many goroutines and on the heartbeat
// path: they must be cheap and must not block.
type Recorder interface {
	// Request is one API call.
	Request(Request)
	// Heartbeat is one lease renewal or status patch attempt and its outcome.
	Heartbeat(kind string, err error)
	// LeaseRenewed is a successful renewal, with the time since the node's previous one (0 for the
	// first): how closely the fleet keeps the kubelet's timing.
	LeaseRenewed(interval time.Duration)
}

// Request is one API call as recorded.
type Request struct {
	// Verb and Resource as the apiserver names them ("update", "leases").
	Verb, Resource string
	Err            error         // nil on success
	Latency        time.Duration // from send to answer
	// RequestBytes and ResponseBytes are the bodies' sizes on the wire (retries included), as the
	// transport saw them (Meter); 0 on clients that do not count them, such as fakes.
	RequestBytes, ResponseBytes int64
	// Node is the agent's node.
	Node string
	// Sent is when the request went out, on the fleet's clock (after a latency fault's delay).
	Sent time.Time
	// Due is when the loop tick this request is the first of was due on the scheduler; zero for the
	// other requests of a tick and for ticks run at once (start, restart). SendLag is from Due to
	// when the agent was ready to send, a latency fault's delay left out: fakelet's own lag, what its
	// scheduler and workers added to the kubelet's timing.
	Due     time.Time
	SendLag time.Duration
}

// Recorders sends everything to each of its recorders in turn.
type Recorders []Recorder

// JoinRecorders returns one Recorder for rs, leaving out nils and flattening nested Recorders, so
// a heartbeat makes one call per recorder however the recorders were put together.
func JoinRecorders(rs ...Recorder) Recorder {
	var out Recorders
	for _, r := range rs {
		switch r := r.(type) {
		case nil:
		case Recorders:
			out = append(out, r...)
		default:
			out = append(out, r)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}

// Request implements Recorder.
func (rs Recorders) Request(req Request) {
	for _, r := range rs {
		r.Request(req)
	}
}

// Heartbeat implements Recorder.
func (rs Recorders) Heartbeat(kind string, err error) {
	for _, r := range rs {
		r.Heartbeat(kind, err)
	}
}

// LeaseRenewed implements Recorder.
func (rs Recorders) LeaseRenewed(interval time.Duration) {
	for _, r := range rs {
		r.LeaseRenewed(interval)
	}
}

// Stats is what an agent did, for measurement.
type Stats struct {
	LastLeaseRenewal time.Time // zero if never
	LastStatusPatch  time.Time
	LeaseRenewals    int64
	StatusPatches    int64
	RequestErrors    int64
	// PodAnnotationErrors counts the pods whose fakelet.dev/ annotations did not parse.
	PodAnnotationErrors int64
}

type stats struct {
	lastLease, lastStatus       atomic.Int64 // unix nanoseconds
	renewals, patches, reqFails atomic.Int64
	podAnnotationErrors         atomic.Int64
}

// Stats returns the agent's counters and the times of its last successful heartbeats.
func (a *Agent) Stats() Stats {
	return Stats{
		LastLeaseRenewal:    unixNano(a.stats.lastLease.Load()),
		LastStatusPatch:     unixNano(a.stats.lastStatus.Load()),
		LeaseRenewals:       a.stats.renewals.Load(),
		StatusPatches:       a.stats.patches.Load(),
		RequestErrors:       a.stats.reqFails.Load(),
		PodAnnotationErrors: a.stats.podAnnotationErrors.Load(),
	}
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (a *Agent) leaseRenewed(now time.Time) {
	prev := a.stats.lastLease.Swap(now.UnixNano())
	a.stats.renewals.Add(1)
	if rec := a.cfg.Recorder; rec != nil {
		var interval time.Duration
		if prev != 0 {
			interval = now.Sub(time.Unix(0, prev))
		}
		rec.LeaseRenewed(interval)
	}
}

func (a *Agent) statusPatched(now time.Time) {
	a.stats.lastStatus.Store(now.UnixNano())
	a.stats.patches.Add(1)
}

func (a *Agent) heartbeat(kind string, err error) {
	if rec := a.cfg.Recorder; rec != nil {
		rec.Heartbeat(kind, err)
	}
}
