package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
)

// A run holds its whole shard of a fleet or none of it: before any agent adopts a Node, the run
// takes its shard's claim, a Lease in kube-node-lease named for the fleet's name prefix and the shard (ClaimName),
// held by the run's ID and renewed while the run lives. Of two runs started at once, one creates (or
// takes over) the Lease and the other's create or update fails on the server; the other then names
// the holder and refuses, having written nothing. At its end a run releases the claim (no holder, its
// run ID left in the annotation), so that the next run knows that run stopped and adopts what it
// kept at once; a clean run, which deleted all it had, deletes the claim instead. A claim whose
// holder crashed is taken over once it has stayed unchanged for a lease duration on the taker's
// clock (holders.go).

// ClaimName is the name of the claim Lease of shard s of the fleet whose nodes are named with
// prefix: the names are what two runs must not share, and the deploy RBAC grants the claims' renewals
// by name for a prefix (deploy/rbac.go). Its dots keep it from ever being a Node's Lease, since node
// names (PREFIX-NNNNN) have none.
func ClaimName(prefix string, s Shard) string {
	count := max(1, s.Count)
	return fmt.Sprintf("fakelet-claim.%s.%d-of-%d", prefix, s.Index, count)
}

// ClaimHeldError is why a run refuses to start: another run holds its shard's claim.
type ClaimHeldError struct {
	Fleet, Lease, Run string
	Shard             Shard
	// Renewed says the holder renewed or took the claim while this run looked; else the claim was
	// taken between this run's read and its own take.
	Renewed bool
}

func (e *ClaimHeldError) Error() string {
	how := "took it a moment before this run could"
	if e.Renewed {
		how = "renewed it while this run watched"
	}
	return fmt.Sprintf("shard %s of fleet %s is held by run %s (Lease %s/%s: it %s): refusing to start, nothing was written; "+
		"stop that run, or run another --fleet", e.Shard, e.Fleet, e.Run, agent.LeaseNamespace, e.Lease, how)
}

// claim is a run's hold on its shard, or what it knows of the claim before it holds it.
type claim struct {
	client   kubernetes.Interface
	name     string
	fleet    string
	shard    Shard
	run      string
	duration time.Duration
	// latest is the claim as the server last returned it to this run; nil while it has none.
	latest *coordinationv1.Lease
	held   bool
}

func newClaim(client kubernetes.Interface, cfg Config) *claim {
	return &claim{client: client, name: ClaimName(cfg.NamePrefix, cfg.Shard), fleet: cfg.Fleet, shard: cfg.Shard, run: cfg.RunID,
		duration: time.Duration(cfg.Heartbeat.LeaseDurationSeconds) * time.Second}
}

func (c *claim) leases() interface {
	Get(context.Context, string, metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(context.Context, *coordinationv1.Lease, metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
} {
	return c.client.CoordinationV1().Leases(agent.LeaseNamespace)
}

// read gets the claim as it is now (nil for none).
func (c *claim) read(ctx context.Context) (*coordinationv1.Lease, error) {
	l, err := c.leases().Get(ctx, c.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the claim Lease %s/%s: %w", agent.LeaseNamespace, c.name, err)
	}
	if l.Labels[agent.FleetLabel] != c.fleet {
		return nil, fmt.Errorf("Lease %s/%s exists and is not fleet %s's claim (no %s=%s label): fakelet leaves it alone and will not run this fleet's shard",
			agent.LeaseNamespace, c.name, c.fleet, agent.FleetLabel, c.fleet)
	}
	return l, nil
}

// holder is the run that holds claim l, or "" for a released claim or none.
func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// stoppedRun is the run that released l (or "" for none).
func stoppedRun(l *coordinationv1.Lease) string {
	if l == nil || holder(l) != "" {
		return ""
	}
	return agent.HeldBy(l)
}

// take makes the claim this run's: a new Lease if seen is nil, else seen taken over, conditional on
// its resource version, so that of two runs taking it at once one fails.
func (c *claim) take(ctx context.Context, seen *coordinationv1.Lease, now time.Time) error {
	var got *coordinationv1.Lease
	var err error
	if seen == nil {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: agent.LeaseNamespace,
			Labels: map[string]string{agent.FleetLabel: c.fleet}}}
		c.stamp(l, now)
		got, err = c.leases().Create(ctx, l, metav1.CreateOptions{})
	} else {
		l := seen.DeepCopy()
		c.stamp(l, now)
		l.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		got, err = c.leases().Update(ctx, l, metav1.UpdateOptions{})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		taker := "another run"
		if l, rerr := c.read(ctx); rerr == nil && holder(l) != "" {
			taker = holder(l)
		}
		return &ClaimHeldError{Fleet: c.fleet, Lease: c.name, Run: taker, Shard: c.shard}
	}
	if err != nil {
		return fmt.Errorf("take the claim Lease %s/%s: %w", agent.LeaseNamespace, c.name, err)
	}
	c.latest, c.held = got, true
	return nil
}

// stamp writes this run into l as its holder, renewed at now.
func (c *claim) stamp(l *coordinationv1.Lease, now time.Time) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[agent.RunAnnotation] = c.run
	l.Spec.HolderIdentity = ptr.To(c.run)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(c.duration / time.Second))
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = l.Spec.RenewTime
	}
}

// errClaimLost is why a run stops: another run took its claim over (this one could not renew it for a
// lease duration, and the other saw it unchanged for as long).
var errClaimLost = errors.New("the claim was taken over by another run")

// renew renews the claim from the server's last copy; a conflict means another run took it over,
// unless the claim is still this run's: a renewal whose answer was lost (a timeout on a busy
// apiserver) can have changed it, and the renewal is made again from what the server holds. A
// conflict whose holder cannot be read is tried again at the next renewal.
func (c *claim) renew(ctx context.Context, now time.Time) error {
	l := c.latest.DeepCopy()
	c.stamp(l, now)
	got, err := c.leases().Update(ctx, l, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		cur, rerr := c.read(ctx)
		if rerr != nil {
			// Who holds it is not known: tried again at the next renewal, within the lease duration.
			return fmt.Errorf("renew the claim Lease %s/%s: %w", agent.LeaseNamespace, c.name, rerr)
		}
		if holder(cur) == c.run {
			c.stamp(cur, now)
			got, err = c.leases().Update(ctx, cur, metav1.UpdateOptions{})
		}
	}
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		c.held = false
		taker := "another run"
		if l, rerr := c.read(ctx); rerr == nil && holder(l) != "" {
			taker = "run " + holder(l)
		}
		return fmt.Errorf("renew the claim Lease %s/%s: %w (%s)", agent.LeaseNamespace, c.name, errClaimLost, taker)
	}
	if err != nil {
		return fmt.Errorf("renew the claim Lease %s/%s: %w", agent.LeaseNamespace, c.name, err)
	}
	c.latest = got
	return nil
}

// release ends the claim at the end of the run, conditional on the copy this run last had: deleted
// if the run left nothing behind, else left without a holder, naming this run as stopped, for the
// next run to adopt what it kept.
func (c *claim) release(ctx context.Context, leftNothing bool) error {
	if !c.held {
		return nil
	}
	c.held = false
	var err error
	if leftNothing {
		err = c.leases().Delete(ctx, c.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &c.latest.UID, ResourceVersion: &c.latest.ResourceVersion}})
	} else {
		l := c.latest.DeepCopy()
		l.Spec.HolderIdentity = nil
		_, err = c.leases().Update(ctx, l, metav1.UpdateOptions{})
	}
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // another run's now: not ours to end
	}
	if err != nil {
		return fmt.Errorf("release the claim Lease %s/%s: %w", agent.LeaseNamespace, c.name, err)
	}
	return nil
}
