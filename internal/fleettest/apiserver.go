// Package fleettest holds what the tests of the fleet and of what builds one share: client-go's fake
// clientset made to behave as the apiserver does where fakelet's ownership rules depend on it, review
// answers, and configurations resolved as a test's input must be.
package fleettest

import (
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// APIServerLike makes the fake clientset assign UIDs on create and honour UID preconditions on
// delete, as the apiserver does; the tracker does neither, so without it a test could not tell a
// delete of the object fakelet created from a delete of another one under the same name.
func APIServerLike(client *fake.Clientset) {
	var mu sync.Mutex
	uids := 0
	client.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if m, err := meta.Accessor(action.(k8stesting.CreateAction).GetObject()); err == nil && m.GetUID() == "" {
			mu.Lock()
			uids++
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", uids)))
			mu.Unlock()
		}
		return false, nil, nil
	})
	client.PrependReactor("delete", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		d := action.(k8stesting.DeleteActionImpl)
		pre := d.DeleteOptions.Preconditions
		if pre == nil || pre.UID == nil {
			return false, nil, nil
		}
		obj, err := client.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		if m, _ := meta.Accessor(obj); m.GetUID() != *pre.UID {
			return true, nil, apierrors.NewConflict(d.GetResource().GroupResource(), d.GetName(),
				fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *pre.UID, m.GetUID()))
		}
		return false, nil, nil
	})
}

// ResourceVersions makes the fake clientset keep metadata.resourceVersion as the apiserver does: a
// new one on every create, update and patch, an update carrying a stale one refused with a conflict,
// and a delete conditional on one (Preconditions.ResourceVersion) refused once the object changed.
// The tracker counts versions but never writes them into the objects, so without it a precondition on
// the version a run saw would always hold.
func ResourceVersions(client *fake.Clientset) {
	var mu sync.Mutex
	rv := 0
	next := func() string {
		mu.Lock()
		defer mu.Unlock()
		rv++
		return strconv.Itoa(rv)
	}
	tracker := client.Tracker()
	stored := func(gvr schema.GroupVersionResource, ns, name string) (metav1.Object, error) {
		obj, err := tracker.Get(gvr, ns, name)
		if err != nil {
			return nil, err
		}
		return meta.Accessor(obj)
	}
	conflict := func(a k8stesting.Action, name, want, got string) error {
		return apierrors.NewConflict(a.GetResource().GroupResource(), name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again (resourceVersion %s, the stored one %s)", want, got))
	}
	client.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if m, err := meta.Accessor(action.(k8stesting.CreateAction).GetObject()); err == nil && action.GetSubresource() == "" {
			m.SetResourceVersion(next())
		}
		return false, nil, nil
	})
	client.PrependReactor("update", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		obj := action.(k8stesting.UpdateAction).GetObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return false, nil, nil
		}
		old, err := stored(action.GetResource(), action.GetNamespace(), m.GetName())
		if err != nil {
			return false, nil, nil // the tracker answers NotFound
		}
		if want := m.GetResourceVersion(); want != "" && want != old.GetResourceVersion() {
			return true, nil, conflict(action, m.GetName(), want, old.GetResourceVersion())
		}
		m.SetResourceVersion(next())
		return false, nil, nil
	})
	client.PrependReactor("patch", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		handled, obj, err := k8stesting.ObjectReaction(tracker)(action)
		if !handled || err != nil || obj == nil {
			return handled, obj, err
		}
		m, merr := meta.Accessor(obj)
		if merr != nil {
			return handled, obj, err
		}
		m.SetResourceVersion(next())
		if err := tracker.Update(action.GetResource(), obj, action.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
	client.PrependReactor("delete", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		d := action.(k8stesting.DeleteActionImpl)
		pre := d.DeleteOptions.Preconditions
		if pre == nil || pre.ResourceVersion == nil {
			return false, nil, nil
		}
		old, err := stored(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		if *pre.ResourceVersion != old.GetResourceVersion() {
			return true, nil, conflict(action, d.GetName(), *pre.ResourceVersion, old.GetResourceVersion())
		}
		return false, nil, nil
	})
}
