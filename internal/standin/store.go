package standin

import (
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"fakelet.dev/fakelet/internal/protofield"
)

// entry is one stored version of an object with its encodings, made once when it is written and
// shared by every answer and watch event that carries it. Nothing in it changes once stored.
type entry struct {
	res *resource
	// obj is the typed object, its TypeMeta set, of a kind kept typed; nil for a kind kept lean
	// (resource.lean), whose object a write or a JSON answer decodes from raw (object).
	obj runtime.Object
	// meta is the object's metadata; of a lean kind's, what writes read: its name, namespace, uid,
	// resourceVersion, creation time and generation.
	meta   metav1.Object
	rv     uint64
	raw    []byte // the object's generated Marshal, within pb: an item of a protobuf list
	pb     []byte // a protobuf body: the magic and a runtime.Unknown around raw
	labels labels.Set
	extra  fields.Set // the kind's own field labels (resource.fields), for field selectors

	json atomic.Pointer[[]byte] // made at the first JSON answer or event that carries it
}

func (e *entry) body(asJSON bool) []byte {
	if !asJSON {
		return e.pb
	}
	if b := e.json.Load(); b != nil {
		return *b
	}
	obj, err := e.object()
	if err != nil { // what was encoded decodes
		panic(err)
	}
	b := mustJSON(obj)
	if !e.json.CompareAndSwap(nil, &b) {
		return *e.json.Load()
	}
	return b
}

// jsonOf is the entry's JSON, made from obj, its object, if no answer has made it yet; kept only
// for a kind kept typed, since a lean one's is made where a patch replaces it, and the history would
// hold it.
func (e *entry) jsonOf(obj runtime.Object) []byte {
	if b := e.json.Load(); b != nil || !e.res.lean {
		return e.body(true)
	}
	return mustJSON(obj)
}

func mustJSON(obj runtime.Object) []byte {
	b, err := json.Marshal(obj)
	if err != nil { // typed objects of the scheme always marshal
		panic(err)
	}
	return b
}

// object is the entry's typed object: of a kind kept typed, the stored one, which no one may
// change; of a lean kind, a copy of its own decoded from raw.
func (e *entry) object() (runtime.Object, error) {
	if e.obj != nil {
		return e.obj, nil
	}
	obj, err := newObject(e.res)
	if err != nil {
		return nil, err
	}
	if err := obj.(unmarshaler).Unmarshal(e.raw); err != nil {
		return nil, err
	}
	e.res.setKind(obj)
	return obj, nil
}

// copyObject is a copy of the entry's object that the caller may change.
func (e *entry) copyObject() (runtime.Object, error) {
	if e.obj != nil {
		return e.obj.DeepCopyObject(), nil
	}
	return e.object()
}

// fields is the entry as a field selector reads it, without a map of its own for every entry.
func (e *entry) fields() fields.Fields { return (*entryFields)(e) }

// field is the value of one of the entry's field labels ("" if it has none of that name).
func (e *entry) field(name string) string { v, _ := (*entryFields)(e).lookup(name); return v }

type entryFields entry

func (f *entryFields) Has(name string) bool   { _, ok := f.lookup(name); return ok }
func (f *entryFields) Get(name string) string { v, _ := f.lookup(name); return v }

func (f *entryFields) lookup(name string) (string, bool) {
	if v, ok := f.extra[name]; ok {
		return v, true
	}
	switch {
	case name == "metadata.name":
		return f.meta.GetName(), true
	case name == "metadata.namespace" && f.res.namespaced:
		return f.meta.GetNamespace(), true
	}
	return "", false
}

type marshaler interface {
	Marshal() ([]byte, error)
}

// newEntry encodes obj, whose resourceVersion is set, for r.
func newEntry(r *resource, obj runtime.Object, rv uint64) (*entry, error) {
	r.setKind(obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	pb, raw, err := protofield.Encode(r.apiVersion, r.kind, obj.(protofield.SizedMarshaler))
	if err != nil {
		return nil, err
	}
	e := &entry{res: r, obj: obj, meta: m, rv: rv, raw: raw, pb: pb, labels: m.GetLabels()}
	if r.fields != nil {
		e.extra = r.fields(obj)
	}
	if r.lean {
		e.obj = nil
		e.meta = &metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
			CreationTimestamp: m.GetCreationTimestamp(), Generation: m.GetGeneration()}
	}
	return e, nil
}

// envelope is a protobuf body: the magic, then a runtime.Unknown of the kind around raw.
func envelope(apiVersion, kind string, raw []byte) []byte {
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	b := make([]byte, len(protofield.Magic)+u.Size())
	copy(b, protofield.Magic)
	if _, err := u.MarshalToSizedBuffer(b[len(protofield.Magic):]); err != nil {
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
	objects  map[objectKey]*entry
	watchers watcherSet
	history  history
}

func newStore(s *Server, r *resource) *store {
	return &store{s: s, res: r, objects: map[objectKey]*entry{}, watchers: newWatcherSet(), history: history{size: s.o.WatchHistory}}
}

// sent tells the watches of a change (watcherSet.send) and keeps it in the history. st.mu is held.
func (st *store) sent(old, now, obj *entry) {
	st.watchers.send(old, now, obj)
	st.history.remember(past{old, now, obj})
}

// objectKey is where a store holds an object, a struct rather than a string made for each lookup.
type objectKey struct{ namespace, name string }

// key is an object's namespace/name, by which a list is sorted.
func key(namespace, name string) string { return namespace + "/" + name }

func (st *store) get(namespace, name string) *entry {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.objects[objectKey{namespace, name}]
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
	k := objectKey{namespace, name}
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
func (st *store) commit(k objectKey, old *entry, obj runtime.Object) (e *entry, code int, stored bool, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.objects[k] != old {
		return nil, 0, false, nil
	}
	rv := st.s.rv.Add(1)
	if obj == nil { // a delete: the object goes out with the resourceVersion of its deletion
		gone, err := old.copyObject()
		if err != nil {
			return nil, 0, true, apierrors.NewInternalError(err)
		}
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
		if e := st.objects[objectKey{namespace, name}]; e != nil && sel.matches(namespace, e) {
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
	return (s.labels == nil || s.labels.Matches(e.labels)) && (s.fields == nil || s.fields.Matches(e.fields()))
}
