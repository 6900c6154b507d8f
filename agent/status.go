package agent

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/conditions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusLoop is the kubelet's node status loop: register if needed, then every update frequency
// recompute the status and patch it if it changed or the report period expired.
type statusLoop struct {
	r          *run
	c          caller
	registered bool
	// listerMiss: the run just created its Node, which a kubelet's node lister has not seen yet when
	// its first status update reads it (the watch event comes after the POST's answer), so that
	// update's first try fails and the next one GETs the Node (kubelet footprint only).
	listerMiss bool
	// readyReported: a patch of this run reported Ready (recovery.go).
	readyReported bool
	lastReport    time.Time     // last successful patch; zero after a (re)start
	delay         time.Duration // the kubelet's delayAfterNodeStatusChange
	delayFor      time.Duration // the report period delay was drawn for
	due           time.Time     // when the next tick is due; zero for the first; moved under Agent.mu while asleep
	// unchanged remembers the last Node and health whose recomputed status did not change: the
	// status is a function of the two (and of the time, in heartbeat times only), so while neither
	// changes the 10 s tick needs no recomputation to know it would send nothing.
	unchanged struct {
		node   *keptNode
		health Health
	}
	// sleeping: the loop waits for its report instead of ticking, until wakeAt or a change
	// (status_sleep.go). Guarded by Agent.mu.
	sleeping bool
	wakeAt   time.Time
	wake     statusWake
}

var errNoNode = errors.New("the node is not known yet")

// Run is one tick of the loop (syncNodeStatus).
func (s *statusLoop) Run() {
	r, a := s.r, s.r.a
	if r.ctx.Err() != nil {
		return
	}
	s.c.due = s.due
	if s.registered || s.register() {
		s.update()
	}
	s.c.due = time.Time{} // a tick that sent nothing has no lag
	if r.ctx.Err() != nil {
		return
	}
	s.next(a.cfg.Scheduler.Clock().Now())
}

// update is updateNodeStatus: up to five tries, the first from the known Node, the others after a GET.
func (s *statusLoop) update() {
	for i := 0; i < statusUpdateRetries; i++ {
		if err := s.tryUpdate(i); err == nil || s.r.ctx.Err() != nil {
			return
		}
	}
}

// tryUpdate is tryUpdateNodeStatus.
func (s *statusLoop) tryUpdate(try int) error {
	a := s.r.a
	var kept *keptNode
	var original *corev1.Node // kept as a Node, once needed
	if try == 0 {
		if s.listerMiss {
			s.listerMiss = false
			return errNoNode
		}
		if kept = a.serverKept(); kept == nil {
			return errNoNode
		}
	} else {
		got, err := s.c.getNode(heartbeatClient)
		if err != nil {
			return fmt.Errorf("get node %s: %w", a.name, err)
		}
		original = a.cfg.Template.Compact(got)
		kept = a.keep(original)
		a.keepNewer(kept)
	}

	clock := a.cfg.Scheduler.Clock()
	a.mu.Lock()
	health := a.health
	a.mu.Unlock()
	var node *corev1.Node
	changed := kept != s.unchanged.node || health != s.unchanged.health
	if changed {
		if original == nil {
			original = a.node(kept)
		}
		node, changed = s.updated(original, health, metav1.NewTime(clock.Now()))
		if !changed {
			s.unchanged.node, s.unchanged.health = kept, health
		}
	}
	report := a.cfg.Heartbeat.StatusReportFrequency
	if a.Mode() == heartbeat.ModeStatus {
		report = a.cfg.Heartbeat.StatusUpdateFrequency
	}
	if s.delayFor != report {
		// The heartbeat mode changed: a delay drawn for the other report period (up to 2.5 minutes
		// for 5) does not apply to this one.
		s.delay, s.delayFor = 0, report
	}
	if !changed && clock.Since(s.lastReport) < report+s.delay {
		return nil
	}
	// A change or a restart picks a new random delay, so that nodes changed together do not report
	// together ever after; a periodic report resets it.
	if changed || s.lastReport.IsZero() {
		s.delay = time.Duration(float64(report) * (a.cfg.rand() - 0.5))
	} else {
		s.delay = 0
	}
	if node == nil {
		if original == nil {
			original = a.node(kept)
		}
		node, _ = s.updated(original, health, metav1.NewTime(clock.Now()))
	}
	var patched *corev1.Node
	var err error
	uid, _ := a.Owned()
	if patch, ok := heartbeatPatch(original.Status.Conditions, node.Status.Conditions, uid); ok && !changed {
		patched, err = s.c.patchHeartbeat(patch)
	} else {
		patched, err = s.c.patchNodeStatus(heartbeatClient, original, node, uid)
	}
	a.heartbeat(KindStatus, err)
	if err != nil {
		return err
	}
	if s.r.a.kubelet() && conditions.NodeReady(node) != conditions.NodeReady(original) {
		s.r.events.nodeStatusEvent(readyReason(conditions.NodeReady(node)))
	}
	if !s.readyReported && conditions.NodeReady(node) {
		s.readyReported = true
		s.r.reportedReady()
	}
	now := clock.Now()
	s.r.pods.nodeReported(s.lastReport.IsZero(), conditions.NodeReady(node) && !conditions.NodeReady(original))
	s.lastReport = now
	a.statusPatched(now)
	a.remember(a.cfg.Template.Compact(patched))
	return nil
}

// updated returns original with the status the kubelet would report now, and whether it differs from
// original in anything but heartbeat times. original is shared and not written to: the copy shares
// everything it does not replace.
func (s *statusLoop) updated(original *corev1.Node, health Health, now metav1.Time) (*corev1.Node, bool) {
	a := s.r.a
	node := *original
	a.cfg.Template.setStatus(a, &node.Status, health.conditions(original.Status.Conditions, now))
	return &node, statusChanged(&original.Status, &node.Status)
}

// statusChanged is the kubelet's nodeStatusHasChanged, without its deep copies. What both statuses
// share (the fleet's image list and resource lists, the agent's addresses: Compact and setStatus
// make them the same slices and maps) is equal without a look inside; the rest is compared as the
// kubelet does, so a field added to NodeStatus is compared too.
func statusChanged(old, new *corev1.NodeStatus) bool {
	if conditionsChanged(old.Conditions, new.Conditions) {
		return true
	}
	o, n := *old, *new
	o.Conditions, n.Conditions = nil, nil
	if sameSlice(o.Images, n.Images) {
		o.Images, n.Images = nil, nil
	}
	if sameSlice(o.Addresses, n.Addresses) {
		o.Addresses, n.Addresses = nil, nil
	}
	if sameMap(o.Capacity, n.Capacity) {
		o.Capacity, n.Capacity = nil, nil
	}
	if sameMap(o.Allocatable, n.Allocatable) {
		o.Allocatable, n.Allocatable = nil, nil
	}
	return !equality.Semantic.DeepEqual(&o, &n)
}

// sameSlice reports whether a and b are the same elements of the same array: equal without a look.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// sameMap reports whether a and b are the same map, or both empty.
func sameMap[K comparable, V any](a, b map[K]V) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b) && (a == nil) == (b == nil)
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
