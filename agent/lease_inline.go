package agent

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/heartbeat"
)

// LeaseRenewer is a Clients.Coordination that can send a renewal's PUT without waiting for its
// answer, so that the common tick of the lease loop, a renewal of the last Lease the server
// returned, wakes no worker: it is sent from the scheduler's own goroutine (RunInline) and its
// answer handled where it arrives. A fleet's transport is one; client-go's clients are not, and
// their agents renew on a worker as before.
type LeaseRenewer interface {
	// RenewLease sends the Update of lease that Leases(lease.Namespace).Update would, and calls done
	// once with what Update would return, on a goroutine of its own choosing; done must not block.
	// ctx's values say whose request it is (IdentityFrom, MeterFrom); its end does not cancel the
	// request, whose answer the agent drops if its run has ended. It returns false, having sent
	// nothing, when it cannot send the request so: the agent then calls Update.
	RenewLease(ctx context.Context, lease *coordinationv1.Lease, done func(*coordinationv1.Lease, error)) bool
}

// inlineRenewal is what a lease loop keeps of the renewal it sent inline until its answer comes;
// every node keeps one.
type inlineRenewal struct {
	answer     func(*coordinationv1.Lease, error) // l.answered, made once rather than at every tick
	start, due time.Time                          // when it was sent, and when its tick was due
	sent       *sentLease                         // the Lease sent, back to sentLeases with its answer
}

// sentLease is the Lease an inline renewal sends: the last Lease the server returned, copied and
// renewed. Once its answer is decoded nothing refers to it (the answer shares its values, not the
// struct), and it serves another node's renewal.
type sentLease struct {
	lease     coordinationv1.Lease
	renewTime metav1.MicroTime
}

var sentLeases = sync.Pool{New: func() any { return new(sentLease) }}

// RunInline implements scheduler.InlineTask: a tick whose first request is the PUT of the last Lease
// the server returned, with no fault of the node's in its way, is sent from the dispatcher and its
// answer handled as it arrives (answered). Any other tick runs on a worker (Run): the first of a run,
// one after a failure, one whose Lease has no owner yet (a GET of the Node), a node with a latency
// or partition fault, a switch to status mode.
func (l *leaseLoop) RunInline() bool {
	r, a := l.r, l.r.a
	renewer, ok := a.api.Coordination.(LeaseRenewer)
	if !ok || l.latest == nil || len(l.latest.OwnerReferences) == 0 || r.ctx.Err() != nil {
		return false
	}
	a.mu.Lock()
	plain := a.mode == heartbeat.ModeLease && a.latency == 0 && !a.partitioned
	a.mu.Unlock()
	if !plain {
		return false
	}
	in := &l.inline
	if in.answer == nil {
		in.answer = l.answered
	}
	// newLease's renewal of a Lease the Node owns already: no request.
	in.sent = sentLeases.Get().(*sentLease)
	next := &in.sent.lease
	l.copyOf(next, l.latest)
	next.Spec.LeaseDurationSeconds = durationOf(a.cfg.Heartbeat.LeaseDurationSeconds)
	in.sent.renewTime = metav1.MicroTime{Time: a.cfg.Scheduler.Clock().Now()}
	next.Spec.RenewTime = &in.sent.renewTime
	l.c.meter.take() // bytes of an earlier request cut short by its run's end
	in.due, in.start = l.due, in.sent.renewTime.Time
	l.due = time.Time{} // before the answer, which may come at once, schedules the next tick
	if !renewer.RenewLease(l.c.ctx, next, in.answer) {
		l.due = in.due
		in.release()
		return false
	}
	return true
}

// release gives the Lease sent back to sentLeases.
func (in *inlineRenewal) release() {
	*in.sent = sentLease{}
	sentLeases.Put(in.sent)
	in.sent = nil
}

// answered is the answer of a renewal RunInline sent, on the goroutine it arrived on: recorded as
// call records a request, the tick ended as Run ends it after a renewal, or, after a failure, the
// rest of the tick handed to a worker, since it may wait (retries, a backoff).
func (l *leaseLoop) answered(lease *coordinationv1.Lease, err error) {
	r, a := l.r, l.r.a
	sched := a.cfg.Scheduler
	in := &l.inline
	defer sched.Release() // after the next tick is queued, so that WaitIdle sees one or the other
	defer in.release()
	if r.ctx.Err() != nil {
		return // the kubelet died mid-request: nothing to record
	}
	l.c.record("update", "leases", err, in.start, in.due, in.start)
	if l.updated(lease, err) {
		l.next()
		return
	}
	sched.At(sched.Clock().Now(), &leaseRetry{l: l, err: err})
}

// leaseRetry is the rest of a tick whose inline renewal failed, on a worker.
type leaseRetry struct {
	l   *leaseLoop
	err error
}

// Run is sync after its first update failed with err: the lease controller's further tries, then
// its get or create.
func (t *leaseRetry) Run() {
	l := t.l
	if l.r.ctx.Err() != nil {
		return
	}
	base := l.latest
	if apierrors.IsConflict(t.err) {
		base, _ = l.backoffEnsure()
	}
	if l.retryUpdateFrom(base, 1) != nil {
		l.ensureAndUpdate()
	}
	l.next()
}
