// Package fleettest holds what the fleet's and the scenario runner's tests share: client-go's fake
// clientset made to behave as the apiserver does where fakelet's ownership rules depend on it.
package fleettest

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
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
