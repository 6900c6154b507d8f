package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// objectKind is what a deletion deletes.
type objectKind int

const (
	kindPod objectKind = iota
	kindLease
	kindNode
)

func (k objectKind) String() string { return [...]string{"pod", "lease", "node"}[k] }

// deletion is one object to delete, conditional on the UID fakelet created or adopted, on the run
// that holds it, and on the version fakelet checked.
type deletion struct {
	kind objectKind
	name string
	uid  types.UID
	// run is the fleetname.RunAnnotation the object must still carry, the run that created or adopted it
	// ("" for none); holdsRun says whether it is checked (a pod keeps the run that created it).
	run      string
	holdsRun bool
	// fleet is the fleetname.Label a Node or pod must still carry.
	fleet string
	// owner, if set, is the Node UID a Lease must still be owned by.
	owner types.UID
	// beat, if not zero, is the heartbeat (a Lease's renew time, a Node's Ready heartbeat) the object
	// must still show: fakelet watched it stay there for a lease duration, so its run has stopped, and a
	// newer one is a run that took it since.
	beat time.Time
}

// addName appends the object's name to the one of nodes, leases and pods that lists its kind.
func (d deletion) addName(nodes, leases, pods *[]string) {
	switch d.kind {
	case kindPod:
		*pods = append(*pods, d.name)
	case kindLease:
		*leases = append(*leases, d.name)
	default:
		*nodes = append(*nodes, d.name)
	}
}

// errNotOurs is a deletion's object that is no longer what fakelet meant to delete: replaced, or
// now held by another run. It is left alone, and counts as neither deleted nor left.
var errNotOurs = errors.New("no longer the one fakelet meant to delete")

// sendAttempts bounds the reads and deletes of one object that keeps changing between the two (the
// node lifecycle controller tainting a Node fakelet stopped heartbeating): each change is read and
// checked again before the next delete.
const sendAttempts = 3

// send reads the object, checks that it is still the one to delete (its UID, the run holding it, its
// fleet label, its heartbeat), and deletes it on its UID and the resource version it read, so that
// a write by anyone in between (another run adopting it) makes the delete fail rather than delete
// what that run now holds. Pods go at once: their kubelet is fakelet, and no one else would confirm
// a graceful deletion.
func (d deletion) send(ctx context.Context, client kubernetes.Interface) error {
	var err error
	for range sendAttempts {
		var obj metav1.Object
		if obj, err = d.get(ctx, client); err != nil {
			return err
		}
		if !d.matches(obj) {
			return errNotOurs
		}
		opts := metav1.DeleteOptions{Preconditions: preconditions(obj.GetUID(), obj.GetResourceVersion())}
		switch d.kind {
		case kindPod:
			opts.GracePeriodSeconds = ptr.To[int64](0)
			err = client.CoreV1().Pods(fleetname.PodNamespace).Delete(ctx, d.name, opts)
		case kindLease:
			err = client.CoordinationV1().Leases(agent.LeaseNamespace).Delete(ctx, d.name, opts)
		default:
			err = client.CoreV1().Nodes().Delete(ctx, d.name, opts)
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func (d deletion) get(ctx context.Context, client kubernetes.Interface) (metav1.Object, error) {
	switch d.kind {
	case kindPod:
		return client.CoreV1().Pods(fleetname.PodNamespace).Get(ctx, d.name, metav1.GetOptions{})
	case kindLease:
		return client.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, d.name, metav1.GetOptions{})
	default:
		return client.CoreV1().Nodes().Get(ctx, d.name, metav1.GetOptions{})
	}
}

// matches says whether obj is still the object to delete.
func (d deletion) matches(obj metav1.Object) bool {
	if obj.GetUID() != d.uid || d.holdsRun && agent.HeldBy(obj) != d.run {
		return false
	}
	if d.kind != kindLease && obj.GetLabels()[fleetname.Label] != d.fleet {
		return false
	}
	if d.owner != "" && !slices.ContainsFunc(obj.GetOwnerReferences(), func(o metav1.OwnerReference) bool {
		return o.Kind == "Node" && o.Name == d.name && o.UID == d.owner
	}) {
		return false
	}
	if d.beat.IsZero() {
		return true
	}
	switch o := obj.(type) {
	case *coordinationv1.Lease:
		return o.Spec.RenewTime == nil || o.Spec.RenewTime.Time.Equal(d.beat)
	case *corev1.Node:
		b := beatOf(o, nil)
		return b.status.IsZero() || b.status.Equal(d.beat)
	}
	return true
}

// preconditions are a delete's: the UID, and the resource version when the server gave one.
func preconditions(uid types.UID, rv string) *metav1.Preconditions {
	p := &metav1.Preconditions{UID: &uid}
	if rv != "" {
		p.ResourceVersion = &rv
	}
	return p
}

// Deleted is what a cleanup deleted, by name, and what it left. An object found gone, or replaced by
// another of the same name (whose UID is not the one fakelet had), counts as neither: it is no longer
// fakelet's.
type Deleted struct {
	Nodes, Leases, Pods []string
	// Namespaces are the namespaces of the runs' workloads (DeleteFleet).
	Namespaces []string
	// Left is what the cleanup meant to delete and did not: its delete failed, or the deadline came
	// first. Err says why.
	Left Left
}

// Left names the objects a cleanup did not delete.
type Left struct {
	Nodes, Leases, Pods []string
	Err                 error // the first failure, or the deadline
}

// Count is how many objects are left.
func (l Left) Count() int { return len(l.Nodes) + len(l.Leases) + len(l.Pods) }

// LeftError is a cleanup that left objects behind: it names how many of each kind, a few of them, and
// the first reason.
type LeftError struct {
	Fleet string
	Left  Left
}

func (e *LeftError) Error() string {
	var parts []string
	for _, k := range []struct {
		what  string
		names []string
	}{{"nodes", e.Left.Nodes}, {"leases", e.Left.Leases}, {"pods", e.Left.Pods}} {
		if len(k.names) > 0 {
			parts = append(parts, strconv.Itoa(len(k.names))+" "+k.what+" ("+examples(k.names, 3)+")")
		}
	}
	return fmt.Sprintf("clean up fleet %s: left %s: %v", e.Fleet, strings.Join(parts, ", "), e.Left.Err)
}

func (e *LeftError) Unwrap() error { return e.Left.Err }

// examples lists the first n names and how many more there are.
func examples(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + " and " + strconv.Itoa(len(names)-n) + " more"
}

// The range of a cleanup's rate (--cleanup-qps, Config.CleanupQPS). Below MinCleanupQPS, 10,000
// nodes with their Leases would take more than two days: a typo, not a choice. Above MaxCleanupQPS
// the rate is beyond what an apiserver answers, and the limiter's burst beyond what it should send at
// once.
const (
	MinCleanupQPS = 0.1
	MaxCleanupQPS = 10_000
)

// CheckCleanupQPS says why qps is no rate for a cleanup, or nil.
func CheckCleanupQPS(qps float64) error {
	if !(qps >= MinCleanupQPS && qps <= MaxCleanupQPS) {
		return fmt.Errorf("must be between %v and %v deletions a second, got %v", MinCleanupQPS, MaxCleanupQPS, qps)
	}
	return nil
}

// maxCleanupDeadline is the longest deadline CleanupDeadline gives, the longest time.Duration: a
// longer one would wrap negative and end the cleanup before its first deletion.
const maxCleanupDeadline = time.Duration(math.MaxInt64)

// CleanupDeadline is how long a cleanup of objects deletions at qps a second may take: twice the time
// the rate itself needs, for a slow server, and a minute more for a small fleet; maxCleanupDeadline at
// most, so that a rate below MinCleanupQPS saturates instead of wrapping.
func CleanupDeadline(objects int, qps float64) time.Duration {
	d := float64(time.Minute) + 2*float64(objects)/qps*float64(time.Second)
	if !(d < float64(maxCleanupDeadline)) { // also NaN, for qps 0 with no objects
		return maxCleanupDeadline
	}
	return time.Duration(d)
}

// cleanupProgressEvery is how often a cleanup prints a progress line.
const cleanupProgressEvery = 5 * time.Second

// deleteAll sends the deletions in order, at most qps a second from a pool of workers, until all are
// done or ctx ends, and says what it deleted and what it left. A failed delete does not stop the
// others: a pod that cannot be deleted does not keep its Node and Lease in the cluster. While it runs,
// it writes a progress line to log (if set) every cleanupProgressEvery on clk.
func deleteAll(ctx context.Context, client kubernetes.Interface, items []deletion, qps float64, log io.Writer, clk clock.Clock) Deleted {
	var out Deleted
	if len(items) == 0 {
		return out
	}
	// Enough workers that a request taking a quarter of a second still sends qps a second.
	workers := min(len(items), max(4, min(128, int(math.Ceil(qps/4)))))
	limit := rate.NewLimiter(rate.Limit(qps), max(1, int(qps/10)))
	work := make(chan deletion)
	var mu sync.Mutex
	var firstErr error
	done, failed := 0, 0
	left := func(d deletion) { d.addName(&out.Left.Nodes, &out.Left.Leases, &out.Left.Pods) }
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range work {
				err := limit.Wait(ctx)
				if err == nil {
					err = d.send(ctx, client)
				}
				mu.Lock()
				done++
				switch {
				case err == nil:
					d.addName(&out.Nodes, &out.Leases, &out.Pods)
				case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || errors.Is(err, errNotOurs):
					// Gone, replaced by someone else's, or held by another run now: not ours to delete.
				default:
					failed++
					left(d)
					if firstErr == nil {
						firstErr = fmt.Errorf("delete %s %s: %w", d.kind, d.name, err)
					}
				}
				mu.Unlock()
			}
		}()
	}

	var stopProgress chan struct{}
	var progressDone sync.WaitGroup
	if log != nil {
		stopProgress = make(chan struct{})
		begin := clk.Now()
		progressDone.Add(1)
		go func() {
			defer progressDone.Done()
			for {
				timer := clk.NewTimer(cleanupProgressEvery)
				select {
				case <-stopProgress:
					timer.Stop()
					return
				case <-timer.C():
				}
				mu.Lock()
				d, n, f, p, l := done, len(out.Nodes), failed, len(out.Pods), len(out.Leases)
				mu.Unlock()
				fmt.Fprintf(log, "cleanup: %d of %d deletions sent (%d nodes, %d leases, %d pods deleted), %d failed, %v\n",
					d, len(items), n, l, p, f, clk.Since(begin).Round(time.Second))
			}
		}()
	}

	next := 0
feed:
	for ; next < len(items); next++ {
		select {
		case work <- items[next]:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if stopProgress != nil {
		close(stopProgress)
		progressDone.Wait()
	}
	for _, d := range items[next:] {
		left(d)
	}
	if next < len(items) && firstErr == nil {
		firstErr = fmt.Errorf("%d deletions not sent: %w", len(items)-next, context.Cause(ctx))
	} else if next < len(items) {
		firstErr = fmt.Errorf("%d deletions not sent (%w); first failure: %w", len(items)-next, context.Cause(ctx), firstErr)
	}
	out.Left.Err = firstErr
	for _, s := range [][]string{out.Nodes, out.Leases, out.Pods, out.Left.Nodes, out.Left.Leases, out.Left.Pods} {
		sort.Strings(s)
	}
	return out
}
