package agent

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"
	"unsafe"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
)

// leaseLoop renews the node's Lease. It is the lease controller of k8s.io/component-helpers v0.37.2
// (apimachinery/lease/controller.go) request for request: Run's wait.JitterUntil(sync, renewInterval,
// 0.04, sliding) becomes a rescheduling on the fleet's clock, and its backoff sleeps park on the same
// clock. It is reimplemented, not called, because the upstream controller sleeps on the real clock in
// a goroutine of its own (see package doc); TestLeaseLoopMatchesUpstreamController holds the two to
// the same requests.
type leaseLoop struct {
	r      *run
	c      caller
	latest *coordinationv1.Lease // the lease the server last returned to us
	active bool                  // scheduled; guarded by Agent.mu
	uid    types.UID             // the Lease last created or renewed, as own recorded it
	due    time.Time             // when the next tick is due; zero when it was scheduled to run at once
	inline inlineRenewal         // the renewal sent by RunInline (lease_inline.go)
}

// Run is one tick of the loop.
func (l *leaseLoop) Run() {
	r, a := l.r, l.r.a
	due := l.due
	l.due = time.Time{} // a switch back to lease mode schedules the next tick at once
	if r.ctx.Err() != nil {
		return
	}
	a.mu.Lock()
	if a.mode != heartbeat.ModeLease {
		l.active = false
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	l.c.due = due
	l.sync()
	l.c.due = time.Time{}
	l.next()
}

// next schedules the next tick, a jittered renew interval from the end of this one (JitterUntil's
// sliding period), unless the run has ended.
func (l *leaseLoop) next() {
	a := l.r.a
	if l.r.ctx.Err() != nil {
		return
	}
	l.due = a.cfg.Scheduler.Clock().Now().Add(a.cfg.jitter(a.cfg.Heartbeat.RenewInterval, loopJitter))
	a.cfg.Scheduler.At(l.due, l)
}

func (l *leaseLoop) sync() {
	if l.latest != nil {
		// The server's copy rarely changes under us, so update from the last one we got: no GET.
		if err := l.retryUpdate(l.latest); err == nil {
			return
		}
	}
	l.ensureAndUpdate()
}

// ensureAndUpdate is the rest of sync once updating from the last Lease failed or there was none:
// get or create the Lease, and update what was found.
func (l *leaseLoop) ensureAndUpdate() {
	lease, created := l.backoffEnsure()
	l.latest = compactLease(lease, l.r.a.name, l.r.a.cfg.Template)
	if !created && lease != nil {
		_ = l.retryUpdate(lease)
	}
}

// backoffEnsure gets or creates the lease, backing off from 200 ms to 7 s between failed tries.
func (l *leaseLoop) backoffEnsure() (*coordinationv1.Lease, bool) {
	sleep := 100 * time.Millisecond
	for {
		lease, created, err := l.ensure()
		if err == nil {
			return lease, created
		}
		sleep = min(2*sleep, MaxBackoff)
		if l.r.a.cfg.Scheduler.Sleep(l.r.ctx, sleep) != nil {
			return nil, false
		}
	}
}

// ensure creates the lease if it does not exist, and says whether it did.
func (l *leaseLoop) ensure() (*coordinationv1.Lease, bool, error) {
	lease, err := l.c.getLease()
	if apierrors.IsNotFound(err) {
		fresh, err := l.newLease(nil)
		if err != nil {
			// Most likely the Node does not exist yet: no lease this tick, try at the next.
			return nil, false, nil
		}
		lease, err := l.c.createLease(fresh)
		if lease != nil && lease.UID != "" {
			l.own(lease) // created, even if the run ended while the answer was on its way
		}
		l.r.a.heartbeat(KindLease, err)
		if err != nil {
			return nil, false, err
		}
		l.renewed()
		return lease, true, nil
	} else if err != nil {
		return nil, false, err
	}
	if err := l.checkOwner(lease); err != nil {
		l.r.a.heartbeat(KindLease, err)
		return nil, false, err
	}
	return lease, false, nil
}

// ErrLeaseNotOurs is why an agent leaves a Lease with its name alone: a Node other than its own owns
// it, or no Node does.
var ErrLeaseNotOurs = errors.New("the lease is not this node's: left alone")

// checkOwner makes sure that a Lease found on the server may be renewed: a kubelet renews whatever
// Lease has its node's name, but fakelet must not write to another fleet's, nor to one that a Node of
// ours no longer owns (it was deleted and created again: the garbage collector deletes such a Lease,
// and the agent then creates its own). Nor does it take over a Lease without an owner, as a kubelet
// would: fakelet creates every Lease owned by its Node, so one without an owner is someone else's,
// whatever its name. The agent's view of its Node (from its own requests
// or the fleet's watch) usually names the UID; only without one does this cost a GET of the Node.
// Deliberate difference from a kubelet, for ownership; the steady state sends the same requests.
func (l *leaseLoop) checkOwner(lease *coordinationv1.Lease) error {
	a := l.r.a
	var owner *metav1.OwnerReference
	for i, o := range lease.OwnerReferences {
		if o.Kind == "Node" {
			owner = &lease.OwnerReferences[i]
			break
		}
	}
	if owner == nil {
		return fmt.Errorf("lease %s has no owner, so fakelet did not create it: %w", a.name, ErrLeaseNotOurs)
	}
	node := a.serverNode()
	if node == nil || node.UID != owner.UID || !a.cfg.Template.Owns(node) {
		fetched, err := l.c.getNode(heartbeatClient)
		if err != nil {
			return fmt.Errorf("check the owner of lease %s: %w", a.name, err)
		}
		if !a.cfg.Template.Owns(fetched) {
			err := &ForeignNodeError{Node: a.name, Fleet: a.cfg.Template.Fleet, Labels: fetched.Labels}
			a.fail(err)
			return err
		}
		a.remember(a.cfg.Template.Compact(fetched))
		node = fetched
	}
	if owner.Name != a.name || owner.UID != node.UID {
		return fmt.Errorf("lease %s is owned by node %s (uid %s), not by node %s (uid %s): %w",
			a.name, owner.Name, owner.UID, a.name, node.UID, ErrLeaseNotOurs)
	}
	if err := a.heldElsewhere(lease); err != nil {
		a.fail(err)
		return err
	}
	return nil
}

// retryUpdate updates the lease up to leaseUpdateRetries times, refetching it after a conflict.
func (l *leaseLoop) retryUpdate(base *coordinationv1.Lease) error {
	return l.retryUpdateFrom(base, 0)
}

// retryUpdateFrom is retryUpdate from its try i on.
func (l *leaseLoop) retryUpdateFrom(base *coordinationv1.Lease, i int) error {
	for ; i < leaseUpdateRetries; i++ {
		next, err := l.newLease(base)
		if err == nil {
			lease, err := l.c.updateLease(next)
			if l.updated(lease, err) {
				return nil
			}
			if apierrors.IsConflict(err) {
				base, _ = l.backoffEnsure()
				continue
			}
		}
		if l.r.ctx.Err() != nil {
			return l.r.ctx.Err()
		}
	}
	return fmt.Errorf("failed %d attempts to update lease", leaseUpdateRetries)
}

// updated takes the outcome of an update: the heartbeat recorded, and the server's Lease kept if it
// succeeded, which it says.
func (l *leaseLoop) updated(lease *coordinationv1.Lease, err error) bool {
	l.r.a.heartbeat(KindLease, err)
	if err != nil {
		return false
	}
	l.own(lease)
	l.latest = compactLease(lease, l.r.a.name, l.r.a.cfg.Template)
	l.renewed()
	return true
}

// newLease returns base's copy (or a new lease) renewed now, owned by the Node: the kubelet's
// SetNodeOwnerFunc fetches the Node for its UID while the lease has no owner.
func (l *leaseLoop) newLease(base *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	a := l.r.a
	var lease *coordinationv1.Lease
	if base == nil {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: LeaseNamespace, Annotations: a.cfg.Template.leaseAnnotations},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(a.name)},
		}
	} else {
		lease = new(coordinationv1.Lease)
		l.copyOf(lease, base)
	}
	lease.Spec.LeaseDurationSeconds = durationOf(a.cfg.Heartbeat.LeaseDurationSeconds)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: a.cfg.Scheduler.Clock().Now()}
	if len(lease.OwnerReferences) == 0 {
		node, err := l.c.getNode(heartbeatClient)
		if err != nil {
			return lease, err
		}
		// A kubelet would own whatever Node has its name; fakelet must never tie itself to another's.
		if !a.cfg.Template.Owns(node) {
			err := &ForeignNodeError{Node: a.name, Fleet: a.cfg.Template.Fleet, Labels: node.Labels}
			a.fail(err)
			return lease, err
		}
		lease.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: corev1.SchemeGroupVersion.Version,
			Kind:       "Node",
			Name:       a.name,
			UID:        node.UID,
		}}
	}
	return lease, nil
}

// copyOf makes lease base's copy, to be renewed: the lease controller deep-copies base; a shallow
// copy sends the same object, since only the fields newLease replaces differ and base (the server's
// answer, kept as latest) is never written.
func (l *leaseLoop) copyOf(lease, base *coordinationv1.Lease) {
	*lease = *base
	if run := l.r.a.cfg.Template.RunID; run != "" && HeldBy(lease) != run {
		// Adopted from an earlier run: say which run holds it now. Only this first renewal
		// differs from the kubelet's PUT.
		lease.Annotations = maps.Clone(lease.Annotations)
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		lease.Annotations[fleetname.RunAnnotation] = run
	}
}

// durationOf is a pointer to d that every Lease sent with that duration shares, as the answers
// decoded onto them do (transport): a fleet's Leases have one duration.
func durationOf(d int32) *int32 {
	if p := leaseDuration.Load(); p != nil && *p == d {
		return p
	}
	leaseDuration.Store(&d)
	return &d
}

var leaseDuration atomic.Pointer[int32]

// compactLease shares what every node's Lease spells alike with one copy, as Template.Compact does
// for Nodes: the agent keeps the server's Lease from one renewal to the next. lease is the server's
// answer, decoded for this agent, perhaps onto the Lease it sent (share); the run's annotations are
// shared when the Lease has just those (newLease copies them before it writes), and the managed
// fields' set when it is the fleet's.
func compactLease(lease *coordinationv1.Lease, name string, t *Template) *coordinationv1.Lease {
	if lease == nil {
		return nil
	}
	if annotations := t.leaseAnnotations; annotations != nil && maps.Equal(lease.Annotations, annotations) {
		lease.Annotations = annotations
	}
	share(&lease.Name, name)
	share(&lease.Namespace, LeaseNamespace)
	if h := lease.Spec.HolderIdentity; h != nil {
		share(h, name)
	}
	for i := range lease.OwnerReferences {
		o := &lease.OwnerReferences[i]
		share(&o.APIVersion, "v1")
		share(&o.Kind, "Node")
		share(&o.Name, name)
	}
	for i := range lease.ManagedFields {
		m := &lease.ManagedFields[i]
		share(&m.Manager, "kubelet")
		share(&m.APIVersion, leaseAPIVersion)
		share((*string)(&m.Operation), string(metav1.ManagedFieldsOperationUpdate))
		share(&m.FieldsType, "FieldsV1")
		if f := t.leaseFields.share(m.FieldsV1); f != m.FieldsV1 {
			m.FieldsV1 = f
		}
	}
	return lease
}

// share makes *p template's copy if it spells the same, and writes nothing if it is that copy
// already: a renewal's answer shares its values with the Lease sent (transport decodes it so), and
// with the Leases before it, which no write may touch while another goroutine may read them.
func share(p *string, template string) {
	if *p == template && unsafe.StringData(*p) != unsafe.StringData(template) {
		*p = template
	}
}

// sharedFields holds one managed fields' set for many objects: every kubelet's Lease has the same.
// Encoding only reads a FieldsV1, so the objects can share it.
type sharedFields struct {
	first atomic.Pointer[metav1.FieldsV1]
}

// share returns the set held if f is the same bytes, else f; the first f is the one held.
func (s *sharedFields) share(f *metav1.FieldsV1) *metav1.FieldsV1 {
	if f == nil {
		return nil
	}
	held := s.first.Load()
	if held == nil {
		if s.first.CompareAndSwap(nil, f) {
			return f
		}
		held = s.first.Load()
	}
	if bytes.Equal(held.Raw, f.Raw) {
		return held
	}
	return f
}

var leaseAPIVersion = coordinationv1.SchemeGroupVersion.String()

// own records lease, which the agent created or renewed, as the run's: the fleet deletes it at the end.
func (l *leaseLoop) own(lease *coordinationv1.Lease) {
	if lease != nil && lease.UID != l.uid {
		l.uid = lease.UID
		l.r.a.ownLease(lease.UID)
	}
}

func (l *leaseLoop) renewed() {
	l.r.a.leaseRenewed(l.r.a.cfg.Scheduler.Clock().Now())
}
