package agent

import (
	"context"
	"errors"
	"math"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// reflector is one of a kubelet's reflectors (client-go tools/cache/reflector.go, v0.37) as the
// apiserver sees it, without its store: it opens a streaming list (WatchListClient, on by default
// since v1.35), keeps watching from the last resource version when the server ends the watch at its
// timeout, relists after 410 Gone or a broken stream, and backs off as the reflector does. Its state
// is a few words; it holds no goroutine and no timer: the transport calls it, and its waits are
// scheduled on the agent's scheduler.
//
// Calls never overlap: the transport calls Opened, Event and Ended in order for one stream, the next
// stream is opened only after Ended (or a failed Opened), through Run.
type reflector struct {
	r *run
	// ctx is the run's, or for a watch the configmap and secret managers close on their own, one of
	// its children (object_watches.go).
	ctx context.Context
	// untracked: the reflector is not one the run must hold to be caught up (recovery.go).
	untracked bool
	// onListed, if set, is called when an untracked reflector's stream gets past its initial list.
	onListed   func()
	resource   string // as recorded
	path       string
	selector   string // fieldSelector; "" for none
	minTimeout int32  // seconds; the timeout is random in [min, 2 min)
	// clientTimeout: the reflector watches through a typed client, whose Watch also sends the
	// timeout as the request's (timeout=7m30s); the pod source's ListWatch on the REST client does not.
	clientTimeout bool
	// pods: the watch is the pod source's, whose events are the node's pods (pod_watch.go).
	pods bool

	rv          string // last synced resource version
	unavailable bool   // rv expired (410) or is too large: the next list starts from the newest
	listing     bool   // the stream is a streaming list that has not sent its initial-events-end yet
	relist      bool   // the next stream is a streaming list
	synced      bool   // the stream is past its initial list: the kubelet holds this watch (recovery.go)
	events      int32  // events of the stream
	opened      time.Time
	sent        time.Time

	backoff      time.Duration // the next backoff step, before jitter
	backoffSteps int16
	backoffReset time.Time // the backoff manager's lastStart
}

// The reflector's defaults (client-go tools/cache/reflector.go).
const (
	reflectorMinWatchTimeout = 5 * 60 // seconds
	backoffInit              = 800 * time.Millisecond
	backoffCap               = 30 * time.Second
	backoffReset             = 2 * time.Minute
	backoffFactor            = 2.0
	backoffJitter            = 1.0
)

// reflectorBackoffSteps is the reflector's Steps: ceil(cap / init).
var reflectorBackoffSteps = int16(math.Ceil(float64(backoffCap) / float64(backoffInit)))

func newReflector(r *run, resource, path, selector string, minTimeout int32, clientTimeout bool) *reflector {
	return &reflector{
		r: r, ctx: r.ctx, resource: resource, path: path, selector: selector, minTimeout: minTimeout, clientTimeout: clientTimeout,
		relist: true, backoff: backoffInit, backoffSteps: reflectorBackoffSteps,
		backoffReset: r.a.cfg.Scheduler.Clock().Now(),
	}
}

// Run opens the next stream: a streaming list, or a watch from the last resource version.
func (f *reflector) Run() {
	if f.ctx.Err() != nil {
		return
	}
	a := f.r.a
	q := url.Values{}
	if f.selector != "" {
		q.Set("fieldSelector", f.selector)
	}
	timeout := int64(f.minTimeout) + int64(a.cfg.rand()*float64(f.minTimeout))
	q.Set("timeoutSeconds", strconv.FormatInt(timeout, 10))
	if f.clientTimeout {
		q.Set("timeout", (time.Duration(timeout) * time.Second).String())
	}
	q.Set("allowWatchBookmarks", "true")
	q.Set("watch", "true")
	f.listing = f.relist
	if f.listing {
		if !f.unavailable && f.rv != "" {
			q.Set("resourceVersion", f.rv)
		}
		q.Set("sendInitialEvents", "true")
		q.Set("resourceVersionMatch", string(metav1.ResourceVersionMatchNotOlderThan))
	} else {
		q.Set("resourceVersion", f.rv)
	}
	f.events = 0
	f.sent = a.cfg.Scheduler.Clock().Now()
	if f.pods && f.listing {
		a.podListStarts()
	}
	a.api.Watches.Watch(f.ctx, WatchRequest{Resource: f.resource, Path: f.path, Query: q, Pods: f.pods}, f)
}

// Opened records the watch request.
func (f *reflector) Opened(err error) {
	a := f.r.a
	now := a.cfg.Scheduler.Clock().Now()
	f.opened = now
	if f.ctx.Err() != nil {
		return
	}
	if rec := a.cfg.Recorder; rec != nil {
		// Without its Node: a watch is no heartbeat, and its latency is the stream's opening, which
		// the false alarms' attribution of a node's last requests must not count as the server's.
		rec.Request(Request{Verb: "watch", Resource: f.resource, Err: err, Latency: now.Sub(f.sent), Sent: f.sent})
	}
	if err != nil {
		f.lost()
		f.failed(err)
		return
	}
	if !f.listing {
		f.gotBack() // a watch from the last resource version: nothing to list first
	}
}

// gotBack and lost tell the run that the reflector holds its watch, or not any more.
func (f *reflector) gotBack() {
	if !f.synced {
		f.synced = true
		switch {
		case !f.untracked:
			f.r.watchSynced()
		case f.onListed != nil:
			f.onListed()
		}
	}
}

func (f *reflector) lost() {
	if f.synced {
		f.synced = false
		if !f.untracked {
			f.r.watchLost()
		}
	}
}

// Event keeps the resource version to resume from. During a streaming list, only the bookmark that
// ends the initial events sets it, since the initial objects come in no order of resource version.
func (f *reflector) Event(e WatchEvent) {
	f.events++
	if f.pods {
		f.r.a.podWatchEvent(e, f.listing)
	}
	if f.listing {
		if e.Type == EventBookmark && e.InitialEventsEnd {
			f.listing, f.relist, f.unavailable = false, false, false
			f.rv = e.ResourceVersion
			f.gotBack()
		}
		return
	}
	f.rv = e.ResourceVersion
}

// Ended decides what the reflector does next, as its watch and watchList loops do.
func (f *reflector) Ended(err error) {
	if f.ctx.Err() != nil {
		return
	}
	if err == nil && f.listing {
		// The stream closed before its initial events ended: watchList tries again at once.
		f.again(0)
		return
	}
	if err == nil && f.r.a.cfg.Scheduler.Clock().Since(f.opened) < time.Second && f.events == 0 {
		err = errVeryShortWatch
	}
	if err == nil {
		f.again(0) // the server's timeout: watch on from the last resource version
		return
	}
	f.lost()
	f.failed(err)
}

var errVeryShortWatch = errors.New("very short watch")

// failed handles a refused watch or a stream that ended in error.
func (f *reflector) failed(err error) {
	switch {
	case isRetriable(err):
		// The apiserver is down or overloaded: the same request again after a backoff.
	case isExpired(err) && f.listing:
		// The resource version is gone: stream the newest state at once.
		f.unavailable = true
		f.again(0)
		return
	default:
		// ListAndWatch returns, and the reflector's loop lists again after a backoff. (A streaming
		// list that fails for another reason falls back to a LIST in client-go; the apiservers
		// fakelet runs against all serve streaming lists, so it is not reproduced.)
		f.relist = true
	}
	f.again(f.step())
}

// again opens the next stream after d.
func (f *reflector) again(d time.Duration) {
	f.r.a.cfg.Scheduler.After(d, f)
}

// step is the reflector's backoff manager's Step: exponential with full jitter, capped, reset every
// two minutes.
func (f *reflector) step() time.Duration {
	clock := f.r.a.cfg.Scheduler.Clock()
	if clock.Since(f.backoffReset) > backoffReset {
		f.backoff, f.backoffSteps, f.backoffReset = backoffInit, reflectorBackoffSteps, clock.Now()
	}
	d := f.backoff
	if f.backoffSteps > 0 {
		f.backoffSteps--
		next := time.Duration(float64(f.backoff) * backoffFactor)
		if next > backoffCap {
			next, f.backoffSteps = backoffCap, 0
		}
		f.backoff = next
	}
	return d + time.Duration(f.r.a.cfg.rand()*backoffJitter*float64(d))
}

// isRetriable is the reflector's isWatchErrorRetriable.
func isRetriable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

// isExpired is the reflector's isExpiredError or isTooLargeResourceVersionError.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}
