package standin

import (
	"encoding/json"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// entry is one stored version of an object with its encodings, made once when it is written and
// shared by every answer and watch event that carries it. Nothing in it changes once stored.
type entry struct {
	obj    runtime.Object // typed, its TypeMeta set
	meta   metav1.Object
	rv     uint64
	raw    []byte // the object's generated Marshal: an item of a protobuf list
	pb     []byte // a protobuf body: the magic and a runtime.Unknown around raw
	labels labels.Set
	fields fields.Set

	jsonOnce sync.Once
	json     []byte
}

func (e *entry) body(asJSON bool) []byte {
	if !asJSON {
		return e.pb
	}
	e.jsonOnce.Do(func() {
		b, err := json.Marshal(e.obj)
		if err != nil { // typed objects of the scheme always marshal
			panic(err)
		}
		e.json = b
	})
	return e.json
}

type marshaler interface {
	Marshal() ([]byte, error)
}

// newEntry encodes obj, whose resourceVersion is set, for r.
func newEntry(r *resource, obj runtime.Object, rv uint64) (*entry, error) {
	obj.GetObjectKind().SetGroupVersionKind(r.gvk())
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	raw, err := obj.(marshaler).Marshal()
	if err != nil {
		return nil, err
	}
	e := &entry{obj: obj, meta: m, rv: rv, raw: raw, pb: envelope(r.apiVersion, r.kind, raw), labels: m.GetLabels()}
	e.fields = fields.Set{"metadata.name": m.GetName()}
	if r.namespaced {
		e.fields["metadata.namespace"] = m.GetNamespace()
	}
	if r.fields != nil {
		for k, v := range r.fields(obj) {
			e.fields[k] = v
		}
	}
	return e, nil
}

// envelope is a protobuf body: the magic, then a runtime.Unknown of the kind around raw.
func envelope(apiVersion, kind string, raw []byte) []byte {
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	b := make([]byte, len(protobufMagic)+u.Size())
	copy(b, protobufMagic)
	if _, err := u.MarshalToSizedBuffer(b[len(protobufMagic):]); err != nil {
		panic(err) // a sized buffer of the message's own size
	}
	return b
}

// store holds one resource's objects and its watches. mu orders its writes: each gets the next
// resourceVersion and reaches its watches under mu, so that every watch sees them in order.
type store struct {
	s   *Server
	res *resource

	mu       sync.Mutex
	objects  map[string]*entry // by namespace/name
	watchers watcherSet
	history  history
}

func newStore(s *Server, r *resource) *store {
	return &store{s: s, res: r, objects: map[string]*entry{}, watchers: newWatcherSet(), history: history{size: s.o.WatchHistory}}
}

// sent tells the watches of a change (watcherSet.send) and keeps it in the history. st.mu is held.
func (st *store) sent(old, now, obj *entry) {
	st.watchers.send(old, now, obj)
	st.history.remember(past{old, now, obj})
}

func key(namespace, name string) string { return namespace + "/" + name }

func (st *store) get(namespace, name string) *entry {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.objects[key(namespace, name)]
}

// change is what one write does to the object at its key: it returns the new object (nil to
// delete it), or an apiserver error. It may run more than once, each time on the object then
// stored, and must not change old.
type change func(old *entry) (runtime.Object, error)

// write applies c to the object at namespace/name and tells the watches. It returns the object
// written (the deleted one for a delete) and the status code of its answer. c runs outside mu, as
// the apiserver's GuaranteedUpdate runs its update function: a write that finds another stored
// meanwhile runs c again on that one, so that a costly patch does not hold up the resource's reads.
func (st *store) write(namespace, name string, c change) (*entry, int, error) {
	k := key(namespace, name)
	for {
		old := st.get(namespace, name)
		obj, err := c(old)
		if err != nil {
			return nil, 0, err
		}
		e, code, stored, err := st.commit(k, old, obj)
		if stored {
			return e, code, err
		}
	}
}

// commit stores obj (or deletes the object, for a nil obj) if the object at k is still old.
func (st *store) commit(k string, old *entry, obj runtime.Object) (e *entry, code int, stored bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.objects[k] != old {
		return nil, 0, false, nil
	}
	rv := st.s.rv.Add(1)
	if obj == nil { // a delete: the object goes out with the resourceVersion of its deletion
		gone := old.obj.DeepCopyObject()
		mustAccessor(gone).SetResourceVersion(resourceVersionOf(rv))
		e, err := newEntry(st.res, gone, rv)
		if err != nil {
			return nil, 0, true, apierrors.NewInternalError(err)
		}
		delete(st.objects, k)
		st.sent(old, nil, e)
		return e, http.StatusOK, true, nil
	}
	mustAccessor(obj).SetResourceVersion(resourceVersionOf(rv))
	e, err = newEntry(st.res, obj, rv)
	if err != nil {
		return nil, 0, true, apierrors.NewInternalError(err)
	}
	st.objects[k] = e
	st.sent(old, e, e)
	if old == nil {
		return e, http.StatusCreated, true, nil
	}
	return e, http.StatusOK, true, nil
}

// list returns the objects that match, and the resourceVersion they are at.
func (st *store) list(namespace string, sel selector) ([]*entry, uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.matching(namespace, sel), st.s.rv.Load()
}

// matching is the objects sel selects; st.mu is held. A selector of one name, as a kubelet's watch
// of its own Node, is a lookup.
func (st *store) matching(namespace string, sel selector) []*entry {
	if name, ok := exactName(sel); ok && (namespace != "" || !st.res.namespaced) {
		if e := st.objects[key(namespace, name)]; e != nil && sel.matches(namespace, e) {
			return []*entry{e}
		}
		return nil
	}
	var out []*entry
	for _, e := range st.objects {
		if sel.matches(namespace, e) {
			out = append(out, e)
		}
	}
	return out
}

func exactName(sel selector) (string, bool) {
	if sel.fields == nil {
		return "", false
	}
	return sel.fields.RequiresExactMatch("metadata.name")
}

func mustAccessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err) // every kind of the resource table has ObjectMeta
	}
	return m
}

// newObject is an empty object of r's kind.
func newObject(r *resource) (runtime.Object, error) { return scheme.Scheme.New(r.gvk()) }

// selector is a request's namespace, label and field selectors.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

func (s selector) matches(namespace string, e *entry) bool {
	if namespace != "" && e.meta.GetNamespace() != namespace {
		return false
	}
	return (s.labels == nil || s.labels.Matches(e.labels)) && (s.fields == nil || s.fields.Matches(e.fields))
}
