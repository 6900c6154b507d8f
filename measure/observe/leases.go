package observe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"fakelet.dev/fakelet/internal/leancodec"
)

// leaseNamespace is where kubelets keep their node Leases.
const leaseNamespace = "kube-node-lease"

// WatchLeases watches the node Leases of kube-node-lease whose name ours accepts, until ctx ends: it
// counts renewals (a new spec.renewTime) and records Leases created and deleted. It returns once the
// first list arrived. The watch is one more watcher of every Lease write: leave it off when measuring
// the watch load of lease heartbeats.
//
// It is a client-go Reflector (its streaming list, resumption, relist and backoff) over client's
// connections, with three things of its own for the cost of a watch that sees every renewal of the
// fleet: Leases decoded lean (newLeaseCodecs), a store that keeps what it compares of our Leases and
// calls the recorder itself (leaseStore), where an informer has a queue and a handler's goroutines
// between them, and answers not gzipped. kube-apiserver gzips a streaming list's answer for a
// client that accepts it (client-go's transport asks by default) one event a gzip member, each
// compressed alone: a Lease of some 600 bytes shrinks little, and the apiserver's compressing and
// the fleet's inflating of every renewal cost both of them CPU (docs/performance.md).
func (r *Recorder) WatchLeases(ctx context.Context, client kubernetes.Interface, ours func(name string) bool) error {
	rc, err := leaseClient(client)
	if err != nil {
		return fmt.Errorf("watch node leases in %s: %w", leaseNamespace, err)
	}
	leases := leancodec.Resource{Client: rc, Namespace: leaseNamespace, Name: "leases", Identity: true}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l := &coordinationv1.LeaseList{}
			return l, leases.List(ctx, o, l)
		},
		WatchFuncWithContext: leases.Watch,
	}
	store := &leaseStore{r: r, ours: ours, seen: map[string]leaseSeen{}, synced: make(chan struct{})}
	ref := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), &coordinationv1.Lease{}, store,
		cache.ReflectorOptions{Name: "measurement leases"})
	go ref.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	select {
	case <-store.synced:
	case <-syncCtx.Done():
		if ctx.Err() == nil {
			return fmt.Errorf("watch node leases in %s: no list within a minute", leaseNamespace)
		}
	}
	return nil
}

// leaseClient is a REST client of coordination/v1 on client's connections and credentials that
// decodes Leases with newLeaseCodecs.
func leaseClient(client kubernetes.Interface) (*rest.RESTClient, error) {
	rc, ok := client.CoordinationV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return nil, errors.New("the client has no REST client to watch with")
	}
	return newLeaseCodecs().Client(rc, coordinationv1.SchemeGroupVersion)
}

// leaseStore is the Reflector's store: for each of our Leases, what the last seen tells a renewal
// and a new uid by; the others are not kept. Only the Reflector's goroutine calls it.
type leaseStore struct {
	r        *Recorder
	ours     func(name string) bool
	seen     map[string]leaseSeen
	synced   chan struct{} // closed at the first list
	syncOnce sync.Once
}

func (s *leaseStore) lease(obj any) *coordinationv1.Lease {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if l, ok := obj.(*coordinationv1.Lease); ok && s.ours(l.Name) {
		return l
	}
	return nil
}

func (s *leaseStore) Add(obj any) error { return s.Update(obj) }

func (s *leaseStore) Update(obj any) error {
	if l := s.lease(obj); l != nil {
		old, ok := s.seen[l.Name]
		s.r.observeLease(old, ok, l)
		s.seen[l.Name] = seenOf(l)
	}
	return nil
}

func (s *leaseStore) Delete(obj any) error {
	if l := s.lease(obj); l != nil {
		delete(s.seen, l.Name)
		s.r.leaseDeleted(l.Name)
	}
	return nil
}

// Replace is a new list: each Lease in it seen again, and each kept that it lacks deleted, as an
// informer's deltas would have them.
func (s *leaseStore) Replace(list []any, _ string) error {
	listed := make(map[string]bool, len(list))
	for _, obj := range list {
		if l := s.lease(obj); l != nil {
			listed[l.Name] = true
			_ = s.Update(l)
		}
	}
	for name := range s.seen {
		if !listed[name] {
			delete(s.seen, name)
			s.r.leaseDeleted(name)
		}
	}
	s.syncOnce.Do(func() { close(s.synced) })
	return nil
}

// The Reflector reads nothing back from its store.
func (s *leaseStore) List() []any                          { return nil }
func (s *leaseStore) ListKeys() []string                   { return nil }
func (s *leaseStore) Get(any) (any, bool, error)           { return nil, false, nil }
func (s *leaseStore) GetByKey(string) (any, bool, error)   { return nil, false, nil }
func (s *leaseStore) Resync() error                        { return nil }
func (s *leaseStore) Bookmark(string)                      {}
func (s *leaseStore) LastStoreSyncResourceVersion() string { return "" }

// leaseSeen is what the store keeps of a Lease, for every node for the whole run: a value in its
// map, not an object of its own.
type leaseSeen struct {
	uid       types.UID
	renewTime time.Time // zero: none
}

func seenOf(l *coordinationv1.Lease) leaseSeen {
	s := leaseSeen{uid: l.UID}
	if l.Spec.RenewTime != nil {
		s.renewTime = l.Spec.RenewTime.Time
	}
	return s
}

// ObserveLease records a Lease seen for the first time (old nil) or changed, and passes a renewal to
// the OnRenewal function.
func (r *Recorder) ObserveLease(old, l *coordinationv1.Lease) {
	var seen leaseSeen
	if old != nil {
		seen = seenOf(old)
	}
	r.observeLease(seen, old != nil, l)
}

// observeLease is ObserveLease of what the store kept of the old Lease, if known.
func (r *Recorder) observeLease(old leaseSeen, known bool, l *coordinationv1.Lease) {
	if r.recordLease(old, known, l) && r.onRenewal != nil {
		r.onRenewal(l.Name, l.Spec.RenewTime.Time)
	}
}

// recordLease records a Lease seen for the first time (not known) or changed, and says whether its
// renewTime is new.
func (r *Recorder) recordLease(old leaseSeen, known bool, l *coordinationv1.Lease) (renewed bool) {
	at := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.flush()
	if !known || old.uid != l.UID {
		r.add(Transition{At: at, Node: l.Name, Kind: LeaseCreated, Reason: string(l.UID)})
	}
	if !known || old.renewTime.IsZero() || l.Spec.RenewTime == nil || !old.renewTime.Equal(l.Spec.RenewTime.Time) {
		if l.Spec.RenewTime == nil {
			return
		}
		if _, seen := r.leases[l.Name]; seen {
			r.leases[l.Name] = l.Spec.RenewTime.Time
		} else {
			r.leases[r.intern(l.Name)] = l.Spec.RenewTime.Time
		}
		r.renewals++
		return true
	}
	return false
}

func (r *Recorder) leaseDeleted(name string) {
	at := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.flush()
	r.add(Transition{At: at, Node: name, Kind: LeaseDeleted})
}
