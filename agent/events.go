package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"fakelet.dev/fakelet/internal/conditions"
)

// The kubelet's Events (kubelet footprint only). A kubelet records them through client-go's
// tools/record: a recorder whose broadcaster writes them asynchronously to the apiserver, after a
// correlator that drops an object's events beyond its spam filter's budget and turns a repeat of an
// identical event into a PATCH of its count. An agent keeps the same rules with a queue per run,
// drained by one scheduled task, so that a kubelet's events cost nothing while it sends none.
//
// Events are not deleted at the end of a run: a kubelet never deletes its Events, and the apiserver
// drops them after its event TTL (--event-ttl, 1 h by default); deleting them would double the
// writes the footprint is there to reproduce.

// The kubelet's event settings (KubeletConfiguration defaults, client-go tools/record).
const (
	eventRecordQPS   = 50  // eventRecordQPS: the kubelet's event client's QPS
	eventBurst       = 100 // eventBurst
	spamBurst        = 25  // EventSourceObjectSpamFilter's burst per source and object
	spamRefill       = 5 * time.Minute
	eventSinkTries   = 12 // maxTriesPerEvent
	eventSinkBackoff = 10 * time.Second
	eventSource      = "kubelet"
)

// Event reasons and messages of the kubelet (pkg/kubelet/events, nodestatus/setters.go).
const (
	reasonStarting         = "Starting"
	reasonSufficientMemory = "NodeHasSufficientMemory"
	reasonNoDiskPressure   = "NodeHasNoDiskPressure"
	reasonSufficientPID    = "NodeHasSufficientPID"
	reasonAllocatable      = "NodeAllocatableEnforced"
	reasonNodeReady        = "NodeReady"
	reasonNodeNotReady     = "NodeNotReady"
	reasonPulled           = "Pulled"
	reasonCreated          = "Created"
	reasonStarted          = "Started"
	reasonPulling          = "Pulling"
	reasonKilling          = "Killing"
	reasonBackOff          = "BackOff"
	// reasonInvalidAnnotation is fakelet's own: a fakelet.dev/ annotation of the pod did not parse.
	reasonInvalidAnnotation = "InvalidAnnotation"
	messageAllocatable      = "Updated Node Allocatable limit across pods"
	messageStartingKubelet  = "Starting kubelet."
	nodeStatusMessageFormat = "Node %s status is now: %s"
)

// eventKey is what the correlator's logger matches an event on: an identical one is a PATCH.
type eventKey struct {
	object          types.UID
	name            string // the involved object's, with its field path
	reason, message string
}

// sentEvent is an event as last written, to PATCH its count when it repeats.
type sentEvent struct {
	name, namespace string
	count           int32
	first           metav1.Time
}

// eventRecorder is one run's recorder.
type eventRecorder struct {
	r *run
	c caller

	mu      sync.Mutex
	queue   []*corev1.Event
	due     bool // the drain task is scheduled
	sent    map[eventKey]*sentEvent
	spam    map[types.UID]*spamBucket
	limiter *rate.Limiter
}

type spamBucket struct {
	tokens float64
	at     time.Time
}

// nodeEvent records an event about the agent's own Node. The reference carries the Node's UID once
// it is known, as the kubelet's nodeRefWithUID.
func (e *eventRecorder) nodeEvent(reason, message string) {
	uid, _ := e.r.a.Owned()
	e.nodeEventOf(uid, reason, message)
}

// nodeEventOf records an event about the agent's Node of UID uid, for a caller that holds Agent.mu.
func (e *eventRecorder) nodeEventOf(uid types.UID, reason, message string) {
	a := e.r.a
	e.record(corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: a.name, UID: uid}, corev1.EventTypeNormal, reason, message)
}

// nodeStatusEvent is the kubelet's recordNodeStatusEvent.
func (e *eventRecorder) nodeStatusEvent(reason string) {
	e.nodeEvent(reason, fmt.Sprintf(nodeStatusMessageFormat, e.r.a.name, reason))
}

// podEvents records Events about pod st: about one of its containers, or the pod itself.
func (e *eventRecorder) podEvents(st *podState, evs []podRecord) {
	for _, ev := range evs {
		ref := corev1.ObjectReference{Kind: "Pod", Namespace: st.namespace, Name: st.name, UID: st.uid, APIVersion: "v1"}
		if ev.container != "" {
			ref.FieldPath = "spec.containers{" + ev.container + "}"
		}
		e.record(ref, ev.typ, ev.reason, ev.message)
	}
}

// record is the recorder's generateEvent: it makes the event now and queues it for the sink.
func (e *eventRecorder) record(ref corev1.ObjectReference, typ, reason, message string) {
	if e.r.ctx.Err() != nil {
		return
	}
	a := e.r.a
	now := metav1.NewTime(a.cfg.Scheduler.Clock().Now())
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ns},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                typ,
		Source:              corev1.EventSource{Component: eventSource, Host: a.name},
		ReportingController: eventSource,
		ReportingInstance:   a.name,
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.allow(ref.UID, ref.Name, now.Time) {
		return // the spam filter drops it, before the client sees it
	}
	e.queue = append(e.queue, ev)
	if !e.due {
		e.due = true
		a.cfg.Scheduler.After(0, e)
	}
}

// allow is EventSourceObjectSpamFilter: a token bucket per source and involved object, 25 events
// and one more every 5 minutes. e.mu must be held.
func (e *eventRecorder) allow(uid types.UID, name string, now time.Time) bool {
	if e.spam == nil {
		e.spam = map[types.UID]*spamBucket{}
	}
	key := uid
	if key == "" {
		key = types.UID("name/" + name)
	}
	b := e.spam[key]
	if b == nil {
		b = &spamBucket{tokens: spamBurst, at: now}
		e.spam[key] = b
	}
	b.tokens = min(spamBurst, b.tokens+float64(now.Sub(b.at))/float64(spamRefill))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Run writes the queued events in order, at the event client's rate.
func (e *eventRecorder) Run() {
	a := e.r.a
	clock := a.cfg.Scheduler.Clock()
	for e.r.ctx.Err() == nil {
		e.mu.Lock()
		if len(e.queue) == 0 {
			e.due = false
			e.mu.Unlock()
			return
		}
		if e.limiter == nil {
			e.limiter = rate.NewLimiter(eventRecordQPS, eventBurst)
		}
		if d := e.limiter.ReserveN(clock.Now(), 1).DelayFrom(clock.Now()); d > 0 {
			e.mu.Unlock()
			a.cfg.Scheduler.After(d, e)
			return
		}
		ev := e.queue[0]
		// The drained queue lets go of its events: its backing array would otherwise keep every
		// Event a kubelet sent at its start for as long as it sends no other.
		e.queue[0] = nil
		e.queue = e.queue[1:]
		if len(e.queue) == 0 {
			e.queue = nil
		}
		e.mu.Unlock()
		e.write(ev)
	}
}

// write is recordToSink: a repeat of an identical event PATCHes its count, a new one is created;
// a write that got no answer is tried again 10 s later, up to 12 times.
func (e *eventRecorder) write(ev *corev1.Event) {
	key := eventKey{ev.InvolvedObject.UID, ev.InvolvedObject.Name + ev.InvolvedObject.FieldPath, ev.Reason, ev.Message}
	e.mu.Lock()
	prev := e.sent[key]
	e.mu.Unlock()
	for try := 1; ; try++ {
		out, err := e.writeOnce(prev, ev)
		if err == nil {
			e.mu.Lock()
			if e.sent == nil {
				e.sent = map[eventKey]*sentEvent{}
			}
			e.sent[key] = &sentEvent{name: out.Name, namespace: out.Namespace, count: out.Count, first: out.FirstTimestamp}
			e.mu.Unlock()
			return
		}
		if !isTransient(err) || try >= eventSinkTries || e.r.a.cfg.Scheduler.Sleep(e.r.ctx, eventSinkBackoff) != nil {
			return
		}
	}
}

// writeOnce PATCHes the count of prev, or, if there is none or it expired, creates ev.
func (e *eventRecorder) writeOnce(prev *sentEvent, ev *corev1.Event) (*corev1.Event, error) {
	if prev != nil {
		out, err := e.c.patchEvent(prev, ev)
		if err == nil || !isGone(err) {
			return out, err
		}
	}
	return e.c.createEvent(ev)
}

// isTransient says that a write got no answer from the apiserver, which the sink tries again; an
// answer, even a refusal, is final.
func isTransient(err error) bool {
	_, status := err.(apierrors.APIStatus)
	return !status && !errors.Is(err, context.Canceled)
}

// createEvent POSTs an event.
func (c *caller) createEvent(ev *corev1.Event) (out *corev1.Event, err error) {
	err = c.call("create", "events", func(ctx context.Context) error {
		out, err = c.r.a.main().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		return err
	})
	return out, err
}

// patchEvent is the correlator's patch of a repeated event: the two-way merge patch of its count,
// last timestamp and message over an event without them.
func (c *caller) patchEvent(prev *sentEvent, ev *corev1.Event) (out *corev1.Event, err error) {
	patch, err := json.Marshal(struct {
		Count         int32       `json:"count"`
		LastTimestamp metav1.Time `json:"lastTimestamp"`
		Message       string      `json:"message"`
	}{prev.count + 1, ev.LastTimestamp, ev.Message})
	if err != nil {
		return nil, err
	}
	err = c.call("patch", "events", func(ctx context.Context) error {
		out, err = c.r.a.main().Events(prev.namespace).Patch(ctx, prev.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	return out, err
}

// initialNodeEvents records, once per run, what the kubelet's status setters record when they first
// set the Node's conditions (initialNode): memory, disk and PID pressure and readiness, and the
// container manager's enforcement of the node's allocatable resources.
func (r *run) initialNodeEvents(n *corev1.Node) {
	if !r.a.kubelet() || r.nodeEventsSent {
		return
	}
	r.nodeEventsSent = true
	for _, c := range n.Status.Conditions {
		switch {
		case c.Type == corev1.NodeMemoryPressure && c.Status == corev1.ConditionFalse:
			r.events.nodeStatusEvent(reasonSufficientMemory)
		case c.Type == corev1.NodeDiskPressure && c.Status == corev1.ConditionFalse:
			r.events.nodeStatusEvent(reasonNoDiskPressure)
		case c.Type == corev1.NodePIDPressure && c.Status == corev1.ConditionFalse:
			r.events.nodeStatusEvent(reasonSufficientPID)
		}
	}
	r.events.nodeEvent(reasonAllocatable, messageAllocatable)
	r.events.nodeStatusEvent(readyReason(conditions.NodeReady(n)))
}

func readyReason(ready bool) string {
	if ready {
		return reasonNodeReady
	}
	return reasonNodeNotReady
}
