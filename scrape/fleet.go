package scrape

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Families of the fleet's own view of its requests, as FleetSource reports them.
const (
	FleetRequests        = "fakelet_requests_total"
	FleetRequestDuration = "fakelet_request_duration_seconds"
)

// FleetComponent is the component name of the fleet's own snapshots.
const FleetComponent = "fakelet"

var (
	fleetVerbs     = [...]string{"get", "create", "update", "patch", "delete", "list", "watch", "other"}
	fleetResources = [...]string{"nodes", "leases", "pods", "other"}
	// fleetBounds are the latency buckets of the fleet's view, in seconds.
	fleetBounds = [...]float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, math.Inf(1)}
)

// FleetSource counts the requests of a fleet's agents by verb, resource and result, with their
// latencies, and reports them as a Source. It implements agent.Recorder with fixed arrays of atomics:
// cheap enough for the heartbeat path.
type FleetSource struct {
	requests [len(fleetVerbs)][len(fleetResources)][2]atomic.Int64 // ok, error
	buckets  [len(fleetVerbs)][len(fleetResources)][len(fleetBounds)]atomic.Int64
	sumNanos [len(fleetVerbs)][len(fleetResources)]atomic.Int64
}

// Request implements agent.Recorder.
func (f *FleetSource) Request(verb, resource string, err error, latency time.Duration) {
	v, r := indexOf(fleetVerbs[:], verb), indexOf(fleetResources[:], resource)
	result := 0
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
		result = 1 // as fleet.Tally counts: not found and already exists are answers a kubelet expects
	}
	f.requests[v][r][result].Add(1)
	secs := latency.Seconds()
	b := 0
	for b < len(fleetBounds)-1 && secs > fleetBounds[b] {
		b++
	}
	f.buckets[v][r][b].Add(1)
	f.sumNanos[v][r].Add(int64(latency))
}

// Heartbeat implements agent.Recorder.
func (f *FleetSource) Heartbeat(string, error) {}

// LeaseRenewed implements agent.Recorder.
func (f *FleetSource) LeaseRenewed(time.Duration) {}

// Component implements Source.
func (f *FleetSource) Component() string { return FleetComponent }

// Scrape implements Source.
func (f *FleetSource) Scrape(context.Context) (map[string]*Family, error) {
	reqs := &Family{Type: Counter, Labels: Selection[FleetRequests].Labels, Series: map[string]*Series{}}
	dur := &Family{Type: Histogram, Labels: Selection[FleetRequestDuration].Labels, Series: map[string]*Series{}}
	bounds := fleetBounds[:]
	for v, verb := range fleetVerbs {
		for r, res := range fleetResources {
			ok, failed := f.requests[v][r][0].Load(), f.requests[v][r][1].Load()
			if ok+failed == 0 {
				continue
			}
			for result, n := range map[string]int64{"ok": ok, "error": failed} {
				if n > 0 {
					reqs.Series[Key(verb, res, result)] = &Series{Labels: []string{verb, res, result}, Value: float64(n)}
				}
			}
			s := &Series{Labels: []string{verb, res}, Bounds: bounds, Buckets: make([]float64, len(bounds))}
			var cum int64
			for b := range bounds {
				cum += f.buckets[v][r][b].Load()
				s.Buckets[b] = float64(cum)
			}
			s.Value = float64(cum)
			s.Sum = time.Duration(f.sumNanos[v][r].Load()).Seconds()
			dur.Series[Key(verb, res)] = s
		}
	}
	return map[string]*Family{FleetRequests: reqs, FleetRequestDuration: dur}, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return len(list) - 1
}
