// Package lockstep agrees on one wall-clock start time for the shards of a fleet through a
// coordination.k8s.io Lease in the cluster (`fakelet run --start-at auto`): the first shard creates
// it with start = now + a delay long enough for every shard to register its nodes, and the others
// read it. The Lease also says what run it is for (profile, fleet size, shard count), so that a
// shard started with other parameters is refused instead of playing another run in step.
package lockstep

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/fleetname"
)

const (
	// DefaultNamespace holds the Lease unless --coordination-namespace says otherwise: deploy/kubernetes
	// and deploy/rbac create it and grant the Lease there.
	DefaultNamespace = "fakelet"

	startAnnotation = "fakelet.dev/start-at"
	runAnnotation   = "fakelet.dev/run"
	aboutAnnotation = "fakelet.dev/run-description"

	// expiryGrace keeps the Lease current past the profile's last phase, for the shards' cleanup: until
	// it expires, a shard that comes late is told it is late rather than that the Lease is stale.
	expiryGrace = 5 * time.Minute
	// attempts bounds create-or-read rounds: another round is needed only when the Lease is deleted
	// between our create and our read, or when we replace a stale Lease of our own.
	attempts = 5
)

// Options say which run to agree on, and where.
type Options struct {
	Client    kubernetes.Interface
	Namespace string
	// Fleet names the Lease (fakelet-start-FLEET) and labels it, as the fleet's Nodes are.
	Fleet string
	// Holder identifies this shard across restarts of its process (hostname and shard): a restarted
	// creator rejoins, and may clean up, the Lease it created.
	Holder string
	Run    Run
	// Delay is how long after the Lease's creation the first phase begins: long enough for every
	// shard to start and register its nodes.
	Delay time.Duration
	// Duration is the profile's length; the Lease expires Duration plus a grace after the start.
	Duration time.Duration
	Clock    clock.PassiveClock
	Log      io.Writer
}

// Start is the agreed start of a run.
type Start struct {
	At    time.Time
	Lease string // namespace/name, for messages
	// created says this shard created the Lease (in this process or an earlier one), so it deletes it.
	created bool
	uid     types.UID
	opts    Options
}

// LeaseName is the coordination Lease's name for a fleet.
func LeaseName(fleetName string) string { return "fakelet-start-" + fleetName }

// Permissions is what Join and Release need in namespace ns.
func Permissions(ns string) []access.Permission {
	return leasePermissions(ns, "agree on the shards' start time, --start-at auto")
}

// leasePermissions are the verbs on Leases in ns of the start Lease and the Board's posts, each
// created once, read and deleted by the shards.
func leasePermissions(ns, why string) []access.Permission {
	var out []access.Permission
	for _, verb := range []string{"create", "get", "delete"} {
		out = append(out, access.Permission{Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Namespace: ns, For: why})
	}
	return out
}

// Join returns the run's start: the one in the fleet's Lease if another shard wrote it for the same
// run, else now + Delay in a Lease it creates. It refuses a Lease written for another run, one
// whose start has passed (this shard came too late to run in step), a stale one another shard left,
// and an object of that name that is not fakelet's.
func Join(ctx context.Context, o Options) (*Start, error) {
	if err := access.Check(ctx, o.Client, Permissions(o.Namespace)); err != nil {
		return nil, fmt.Errorf("--start-at auto: %w", err)
	}
	name := LeaseName(o.Fleet)
	ref := o.Namespace + "/" + name
	leases := o.Client.CoordinationV1().Leases(o.Namespace)
	for range attempts {
		now := o.Clock.Now()
		at := now.Add(o.Delay).Truncate(time.Millisecond)
		created, err := leases.Create(ctx, o.lease(name, now, at), metav1.CreateOptions{})
		switch {
		case err == nil:
			s := &Start{At: at, Lease: ref, created: true, uid: created.UID, opts: o}
			fmt.Fprintf(o.Log, "start: created Lease %s: phase 0 of %s begins at %s (in %v)\n",
				ref, o.Run, s.At.Format(time.RFC3339Nano), o.Delay)
			return s, nil
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("--start-at auto: create Lease %s: %w (create the namespace, or name another with --coordination-namespace)", ref, err)
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("--start-at auto: create Lease %s: %w", ref, err)
		}
		got, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // deleted since our create: try again
		}
		if err != nil {
			return nil, fmt.Errorf("--start-at auto: read Lease %s: %w", ref, err)
		}
		s, replace, err := o.read(got, ref, now)
		if err != nil {
			return nil, err
		}
		if !replace {
			return s, nil
		}
		// A stale Lease this shard created in an earlier run: ours to remove.
		fmt.Fprintf(o.Log, "start: Lease %s is stale (from a run that began at %s): deleting it\n", ref, got.Annotations[startAnnotation])
		if err := leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &got.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("--start-at auto: delete stale Lease %s: %w", ref, err)
		}
	}
	return nil, fmt.Errorf("--start-at auto: Lease %s changed under us %d times: is another run of fleet %s starting?", ref, attempts, o.Fleet)
}

// lease is the Lease a first shard creates at now: it holds the start, the run it is for, and an
// expiry after the run's end.
func (o Options) lease(name string, now, start time.Time) *coordinationv1.Lease {
	expires := start.Add(o.Duration + expiryGrace).Sub(now)
	mt := metav1.NewMicroTime(now)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: o.Namespace,
			Labels: map[string]string{fleetname.Label: o.Fleet},
			Annotations: map[string]string{
				startAnnotation: start.Format(time.RFC3339Nano),
				runAnnotation:   o.Run.Hash,
				aboutAnnotation: o.Run.String(),
			},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &o.Holder,
			LeaseDurationSeconds: ptr.To(int32(min(math.Ceil(expires.Seconds()), math.MaxInt32))),
			AcquireTime:          &mt,
			RenewTime:            &mt,
		},
	}
}

// read checks a Lease another shard (or an earlier process of this one) created: its start, if it
// is for this run and has not begun; replace if it is a stale one of this shard's.
func (o Options) read(l *coordinationv1.Lease, ref string, now time.Time) (s *Start, replace bool, err error) {
	at, perr := time.Parse(time.RFC3339Nano, l.Annotations[startAnnotation])
	if l.Labels[fleetname.Label] != o.Fleet || perr != nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return nil, false, fmt.Errorf("--start-at auto: Lease %s exists and is not fleet %s's start Lease (no %s=%s label or %s annotation): "+
			"fakelet leaves it alone; name another namespace with --coordination-namespace", ref, o.Fleet, fleetname.Label, o.Fleet, startAnnotation)
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	mine := holder == o.Holder
	expiry := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	if !now.Before(expiry) {
		if mine {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("--start-at auto: Lease %s is stale: %s wrote it for a run (%s) that began at %s and expired at %s; "+
			"fakelet does not reuse it, nor delete what another shard created: if no shard of that run still runs, "+
			"delete it (kubectl -n %s delete lease %s) and start again",
			ref, holder, l.Annotations[aboutAnnotation], at.Format(time.RFC3339), expiry.Format(time.RFC3339), l.Namespace, l.Name)
	}
	if l.Annotations[runAnnotation] != o.Run.Hash {
		return nil, false, fmt.Errorf("--start-at auto: Lease %s is for another run: %s wrote it for %s (parameters %s), "+
			"and this shard runs %s (parameters %s): give every shard the same profile, seed, --nodes, --name-prefix and shard count",
			ref, holder, l.Annotations[aboutAnnotation], l.Annotations[runAnnotation], o.Run, o.Run.Hash)
	}
	if !now.Before(at) {
		return nil, false, fmt.Errorf("--start-at auto: the run of Lease %s began at %s, before this shard joined (%v late): "+
			"it cannot run in step any more; if that run is over, delete the Lease (kubectl -n %s delete lease %s), or wait until it expires at %s",
			ref, at.Format(time.RFC3339Nano), now.Sub(at).Round(time.Millisecond), l.Namespace, l.Name, expiry.Format(time.RFC3339))
	}
	fmt.Fprintf(o.Log, "start: joined Lease %s by %s: phase 0 of %s begins at %s (in %v)\n",
		ref, holder, o.Run, at.Format(time.RFC3339Nano), at.Sub(now).Round(time.Millisecond))
	return &Start{At: at, Lease: ref, created: mine, uid: l.UID, opts: o}, false, nil
}

// Release deletes the Lease if this shard created it, once the run has begun or was interrupted
// (ended by a signal: every shard is being stopped). A creator that failed on its own before the
// start leaves it, so that its restart rejoins the same start; it then expires. The delete is
// conditional on the UID this shard saw, so a Lease someone else made since is never touched.
func (s *Start) Release(ctx context.Context, interrupted bool) error {
	if s == nil || !s.created {
		return nil
	}
	o := s.opts
	if !interrupted && o.Clock.Now().Before(s.At) {
		fmt.Fprintf(o.Log, "start: left Lease %s for the other shards, since this one ended before the start\n", s.Lease)
		return nil
	}
	err := o.Client.CoordinationV1().Leases(o.Namespace).Delete(ctx, LeaseName(o.Fleet),
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.uid}})
	switch {
	case err == nil:
		fmt.Fprintf(o.Log, "start: deleted Lease %s\n", s.Lease)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Gone already, or replaced by another run's: nothing of ours is left.
	default:
		return fmt.Errorf("delete Lease %s: %w", s.Lease, err)
	}
	return nil
}
