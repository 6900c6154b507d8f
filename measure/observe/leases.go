package observe

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// leaseNamespace is where kubelets keep their node Leases.
const leaseNamespace = "kube-node-lease"

// WatchLeases watches the node Leases of kube-node-lease whose name ours accepts, until ctx ends: it
// counts renewals (a new spec.renewTime) and records Leases created and deleted. It returns once the
// first list arrived. The watch is one more watcher of every Lease write: leave it off when measuring
// the watch load of lease heartbeats.
func (r *Recorder) WatchLeases(ctx context.Context, client kubernetes.Interface, ours func(name string) bool) error {
	leases := client.CoordinationV1().Leases(leaseNamespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return leases.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &coordinationv1.Lease{}, 0, cache.Indexers{})
	_ = inf.SetTransform(func(obj any) (any, error) {
		if l, ok := obj.(*coordinationv1.Lease); ok {
			return leaseStub(l), nil
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if l, ok := obj.(*coordinationv1.Lease); ok && ours(l.Name) {
				r.observeLease(nil, l)
			}
		},
		UpdateFunc: func(old, obj any) {
			o, _ := old.(*coordinationv1.Lease)
			if l, ok := obj.(*coordinationv1.Lease); ok && ours(l.Name) {
				r.observeLease(o, l)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if l, ok := obj.(*coordinationv1.Lease); ok && ours(l.Name) {
				r.leaseDeleted(l.Name)
			}
		},
	})
	go inf.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) && ctx.Err() == nil {
		return fmt.Errorf("watch node leases in %s: no list within a minute", leaseNamespace)
	}
	return nil
}

// leaseStub keeps of a Lease what the handlers compare, for the informer's store, which holds one
// per node for the whole run.
func leaseStub(l *coordinationv1.Lease) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: leaseNamespace, UID: l.UID, ResourceVersion: l.ResourceVersion},
		Spec:       coordinationv1.LeaseSpec{RenewTime: l.Spec.RenewTime},
	}
}

// observeLease records a Lease seen for the first time (old nil) or changed, and passes a renewal to
// the OnRenewal function.
func (r *Recorder) observeLease(old, l *coordinationv1.Lease) {
	renewed := r.recordLease(old, l)
	if renewed && r.onRenewal != nil {
		r.onRenewal(l.Name, l.Spec.RenewTime.Time)
	}
}

// recordLease records a Lease seen for the first time (old nil) or changed, and says whether its
// renewTime is new.
func (r *Recorder) recordLease(old, l *coordinationv1.Lease) (renewed bool) {
	at := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.flush()
	if old == nil || old.UID != l.UID {
		r.add(Transition{At: at, Node: l.Name, Kind: LeaseCreated, Reason: string(l.UID)})
	}
	if old == nil || old.Spec.RenewTime == nil || l.Spec.RenewTime == nil || !old.Spec.RenewTime.Equal(l.Spec.RenewTime) {
		if l.Spec.RenewTime == nil {
			return
		}
		s := r.leases[l.Name]
		if s == nil {
			s = &leaseState{}
			r.leases[r.intern(l.Name)] = s
		}
		s.renewals++
		s.lastRenewal = at
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
