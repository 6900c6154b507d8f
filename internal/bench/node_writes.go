package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/internal/pause"
)

// The controllers' writes to the Nodes go on well after every node is Ready: the TTL controller
// annotates every Node again each time the cluster grows past 100, 500, 1000 and 2000 nodes, and
// the node lifecycle controller takes each Node's not-ready taint off, all at the controller
// manager's 20 requests a second, for minutes after a large fleet registered (docs/performance.md).
// Each is an event that the fleet's watches decode, so a window that begins before they end
// measures the registration's wake and not the fleet's steady cost.
const (
	// nodeWritesQuiet is how long the apiserver must have counted none of them before a window.
	nodeWritesQuiet = 10 * time.Second
	nodeWritesPoll  = 2 * time.Second
)

// othersNodeWrites is what the apiserver counted of writes to Nodes besides their status, which is
// all a kubelet writes of its Node after creating it: the controller manager's taints and
// annotations.
func othersNodeWrites(f families) float64 {
	var n float64
	for _, verb := range []string{"PATCH", "PUT", "APPLY"} {
		all := f.sum("apiserver_request_total", map[string]string{"verb": verb, "resource": "nodes"})
		status := f.sum("apiserver_request_total", map[string]string{"verb": verb, "resource": "nodes", "subresource": "status"})
		n += all - status
	}
	return n
}

// quietSince follows a counter, scrape by scrape, to say since when it has not moved.
type quietSince struct {
	last  float64
	since time.Time // zero before the first scrape
}

// observe takes the counter's value at at, and returns how long it has not moved.
func (q *quietSince) observe(at time.Time, v float64) time.Duration {
	if q.since.IsZero() || v != q.last {
		q.last, q.since = v, at
	}
	return at.Sub(q.since)
}

// nodeWrites follows the controllers' writes to the Nodes through the apiserver's metrics.
type nodeWrites struct {
	apiserver func() (families, error)
	clock     clock.PassiveClock
	pause     func(context.Context) error // the wait between two scrapes
}

// realNodeWrites follows them on the wall clock, a scrape every nodeWritesPoll.
func realNodeWrites(apiserver func() (families, error)) nodeWrites {
	return nodeWrites{apiserver, clock.RealClock{}, func(ctx context.Context) error { return pause.For(ctx, nodeWritesPoll) }}
}

// awaitEnd waits until the apiserver has counted no othersNodeWrites for nodeWritesQuiet, for at
// most within, and says in log how long that took. A fleet whose controllers never settle is
// measured anyway: the log says so.
func (w nodeWrites) awaitEnd(ctx context.Context, within time.Duration, log io.Writer) error {
	began := w.clock.Now()
	var q quietSince
	for {
		f, err := w.apiserver()
		if err != nil {
			return fmt.Errorf("the controllers' writes to the Nodes: %w", err)
		}
		now := w.clock.Now()
		if q.observe(now, othersNodeWrites(f)) >= nodeWritesQuiet {
			fmt.Fprintf(log, "   the controllers' writes to the Nodes ended %v after the settle (%.0f in all)\n", q.since.Sub(began).Round(time.Second), q.last)
			return nil
		}
		if now.Sub(began) >= within {
			fmt.Fprintf(log, "   the controllers still write to the Nodes %v after the settle (%.0f in all): measuring anyway\n", within, q.last)
			return nil
		}
		if err := w.pause(ctx); err != nil {
			return err
		}
	}
}
