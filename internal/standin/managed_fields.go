package standin

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// managedFields is the entry the apiserver's field manager keeps for a writer of a Lease, so that a
// Lease carries as many bytes to and fro as it does from an apiserver: a kubelet's lease controller
// owns its spec, its annotations and labels, and the ownerReference to its Node. Other kinds carry
// none. old is the Lease written over (nil for a create), whose field set a renewal shares.
func managedFields(req *http.Request, r *resource, obj runtime.Object, op metav1.ManagedFieldsOperationType, at metav1.Time, old *entry) []metav1.ManagedFieldsEntry {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok || r.gvr.Group != coordinationv1.GroupName {
		return nil
	}
	manager, _, _ := strings.Cut(req.UserAgent(), "/")
	// The entry and its time in one allocation: a renewal makes them every time.
	mf := &struct {
		entries [1]metav1.ManagedFieldsEntry
		at      metav1.Time
	}{at: at}
	mf.entries[0] = metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: r.apiVersion,
		Time: &mf.at, FieldsType: "FieldsV1", FieldsV1: leaseFieldsV1(lease, old)}
	return mf.entries[:]
}

// leaseFieldsV1 is the field set of lease, shared with the Lease it replaces when that names the
// same annotations, labels and owners, as every renewal's does: stored objects are never changed.
func leaseFieldsV1(lease *coordinationv1.Lease, old *entry) *metav1.FieldsV1 {
	if old != nil {
		if was, ok := old.obj.(*coordinationv1.Lease); ok && len(was.ManagedFields) == 1 && was.ManagedFields[0].FieldsV1 != nil &&
			sameFieldSet(was, lease) {
			return was.ManagedFields[0].FieldsV1
		}
	}
	return &metav1.FieldsV1{Raw: leaseFields(lease)}
}

// sameFieldSet says whether leaseFields makes the same bytes of a and b: it reads the keys of
// their annotations and labels and the uids of their owners, nothing else.
func sameFieldSet(a, b *coordinationv1.Lease) bool {
	return sameKeys(a.Annotations, b.Annotations) && sameKeys(a.Labels, b.Labels) &&
		slices.EqualFunc(a.OwnerReferences, b.OwnerReferences, func(x, y metav1.OwnerReference) bool { return x.UID == y.UID })
}

func sameKeys(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// leaseFields is the field set of a Lease written whole, in the apiserver's order. It is made at
// every renewal, so in one buffer.
func leaseFields(lease *coordinationv1.Lease) []byte {
	b := make([]byte, 0, 256)
	b = append(b, '{')
	if len(lease.Annotations)+len(lease.Labels)+len(lease.OwnerReferences) > 0 {
		b = append(b, `"f:metadata":{`...)
		b = appendKeys(b, "annotations", lease.Annotations)
		b = appendKeys(b, "labels", lease.Labels)
		if len(lease.OwnerReferences) > 0 {
			b = append(b, `"f:ownerReferences":{".":{}`...)
			for _, o := range lease.OwnerReferences {
				b = append(b, `,"k:{\"uid\":\"`...)
				b = append(b, o.UID...)
				b = append(b, `\"}":{}`...)
			}
			b = append(b, "},"...)
		}
		b[len(b)-1] = '}' // the last member's comma
		b = append(b, ',')
	}
	b = append(b, `"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`...)
	return b
}

// appendKeys appends the field set of a map of metadata, one member a key in the keys' order, and
// a comma, if it has keys. The keys are qualified names, which JSON quotes as they are; one with a
// quote or a backslash is quoted by encoding/json.
func appendKeys(b []byte, field string, m map[string]string) []byte {
	if len(m) == 0 {
		return b
	}
	b = append(b, `"f:`+field+`":{".":{}`...)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = append(b, ',')
		if strings.ContainsAny(k, `"\`) {
			q, _ := json.Marshal("f:" + k)
			b = append(b, q...)
		} else {
			b = append(b, `"f:`+k+`"`...)
		}
		b = append(b, ":{}"...)
	}
	return append(b, "},"...)
}
