package lockstep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/access"
	"fakelet.dev/fakelet/fleetname"
)

const (
	// boardLabel names the run a post belongs to, so that what a failed run left can be found
	// (kubectl -n fakelet delete lease -l fakelet.dev/board=KEY).
	boardLabel = "fakelet.dev/board"
	// postAnnotation holds what the shard posted.
	postAnnotation = "fakelet.dev/post"
)

// BoardOptions say which run's board to open, and as which shard.
type BoardOptions struct {
	Client    kubernetes.Interface
	Namespace string
	Fleet     string
	Shard     fleetname.Shard
	// Holder identifies this shard's process, as in Options.
	Holder string
	// Run and Start name the run: two runs of the same parameters differ by their start.
	Run   Run
	Start time.Time
	// Owner is the start Lease, when the shards agreed on the start through one: it owns every
	// post, so that the garbage collector deletes what a failed shard left when the start Lease goes.
	Owner *Start
	Log   io.Writer
}

// Board is where the shards of one run post what each saw at each step and read what the others
// posted (fakelet capacity --shard: each shard's verdict on each step). Each post is a Lease of its
// own in the coordination namespace, created by the shard that posts it and never written again:
// no shard touches another's objects, and reading needs only get. Close deletes this shard's posts.
type Board struct {
	o      BoardOptions
	key    string
	posted []post
	keep   time.Time                 // the latest time a post must stay until
	read   map[string]map[int][]byte // the posts read so far, by step and shard index
}

type post struct {
	name string
	uid  types.UID
}

// BoardPermissions is what a Board needs in namespace ns: the verbs of the start Lease (Permissions),
// so that a Role that lets the shards agree on a start lets them post too.
func BoardPermissions(ns string) []access.Permission {
	return leasePermissions(ns, "exchange the shards' verdicts on each step, fakelet capacity --shard")
}

// OpenBoard checks that this shard may post and read in the namespace, before anything is written.
func OpenBoard(ctx context.Context, o BoardOptions) (*Board, error) {
	if err := access.Check(ctx, o.Client, BoardPermissions(o.Namespace)); err != nil {
		return nil, fmt.Errorf("the shards' verdicts: %w", err)
	}
	sum := sha256.Sum256([]byte(o.Run.Hash + "@" + o.Start.UTC().Format(time.RFC3339Nano)))
	return &Board{o: o, key: hex.EncodeToString(sum[:5]), read: map[string]map[int][]byte{}}, nil
}

// PostName is the Lease that holds shard index's post on step.
func (b *Board) PostName(step string, index int) string {
	return fmt.Sprintf("fakelet-post-%s-%s-%s-%d", b.o.Fleet, b.key, step, index)
}

// Post posts this shard's value for step, which the other shards may read until keep: Close waits
// for the latest keep of all.
func (b *Board) Post(ctx context.Context, step string, value []byte, keep time.Time) error {
	name := b.PostName(step, b.o.Shard.Index)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: b.o.Namespace,
			Labels:      map[string]string{fleetname.Label: b.o.Fleet, boardLabel: b.key},
			Annotations: map[string]string{postAnnotation: string(value), runAnnotation: b.o.Run.Hash, aboutAnnotation: b.o.Run.String()},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &b.o.Holder},
	}
	if s := b.o.Owner; s != nil && s.uid != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Name: LeaseName(b.o.Fleet), UID: s.uid}}
	}
	created, err := b.o.Client.CoordinationV1().Leases(b.o.Namespace).Create(ctx, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// The name holds the run's parameters and start: only another process running this very
		// shard of this very run could have made it.
		return fmt.Errorf("post Lease %s/%s exists: is shard %v of this run running twice?", b.o.Namespace, name, b.o.Shard)
	}
	if err != nil {
		return fmt.Errorf("post Lease %s/%s: %w", b.o.Namespace, name, err)
	}
	b.posted = append(b.posted, post{name: name, uid: created.UID})
	if keep.After(b.keep) {
		b.keep = keep
	}
	return nil
}

// Read returns the posts on step of every shard that has posted it so far, by shard index.
func (b *Board) Read(ctx context.Context, step string) (map[int][]byte, error) {
	got := b.read[step]
	if got == nil {
		got = map[int][]byte{}
		b.read[step] = got
	}
	for i := range max(b.o.Shard.Count, 1) {
		if _, ok := got[i]; ok {
			continue
		}
		name := b.PostName(step, i)
		l, err := b.o.Client.CoordinationV1().Leases(b.o.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read Lease %s/%s: %w", b.o.Namespace, name, err)
		}
		v, ok := l.Annotations[postAnnotation]
		if l.Labels[boardLabel] != b.key || !ok {
			return nil, fmt.Errorf("Lease %s/%s is not a post of this run (no %s=%s label or %s annotation)", b.o.Namespace, name, boardLabel, b.key, postAnnotation)
		}
		got[i] = []byte(v)
	}
	return got, nil
}

// KeepUntil is when the last of this shard's posts may go: until then another shard may still be
// reading it.
func (b *Board) KeepUntil() time.Time { return b.keep }

// Close deletes this shard's posts, each on the UID it created, so that nothing another run made
// since is touched. Call it after KeepUntil, or when every shard is being stopped.
func (b *Board) Close(ctx context.Context) error {
	var errs []error
	for _, p := range b.posted {
		err := b.o.Client.CoordinationV1().Leases(b.o.Namespace).Delete(ctx, p.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete Lease %s/%s: %w", b.o.Namespace, p.name, err))
		}
	}
	if len(b.posted) > 0 && len(errs) == 0 {
		fmt.Fprintf(b.o.Log, "verdicts: deleted this shard's %d post(s) in %s\n", len(b.posted), b.o.Namespace)
	}
	b.posted = nil
	return errors.Join(errs...)
}
