package standin

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// create stores a POSTed object: 201, or 409 if its name is taken.
func (s *Server) create(req *http.Request, body []byte, st *store, t target) (*entry, int, error) {
	obj, err := decode(body, t.res)
	if err != nil {
		return nil, 0, err
	}
	m := mustAccessor(obj)
	if t.res.namespaced {
		if m.GetNamespace() != "" && m.GetNamespace() != t.namespace {
			return nil, 0, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		m.SetNamespace(t.namespace)
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + rand.String(5))
	}
	if m.GetName() == "" {
		return nil, 0, apierrors.NewBadRequest("name or generateName is required")
	}
	now := metav1.NewTime(s.o.Clock.Now().Truncate(1e9))
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(now)
	if t.res.generation {
		m.SetGeneration(1)
	}
	m.SetResourceVersion("")
	m.SetManagedFields(managedFields(req, t.res, obj, metav1.ManagedFieldsOperationUpdate, now, nil))
	return st.write(m.GetNamespace(), m.GetName(), func(old *entry) (runtime.Object, error) {
		if old != nil {
			return nil, apierrors.NewAlreadyExists(t.res.gvr.GroupResource(), m.GetName())
		}
		return obj, nil
	})
}

// errModified is the apiserver's word for a write at a stale resourceVersion.
var errModified = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// update stores a PUT object: 200, 404 if there is none, 409 if its resourceVersion is not the
// stored one's. An empty resourceVersion is an unconditional update, which every kind here allows.
func (s *Server) update(req *http.Request, body []byte, st *store, t target) (*entry, int, error) {
	obj, err := decode(body, t.res)
	if err != nil {
		return nil, 0, err
	}
	m := mustAccessor(obj)
	if m.GetName() != t.name {
		return nil, 0, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), t.name))
	}
	if t.res.namespaced {
		m.SetNamespace(t.namespace)
	}
	now := metav1.NewTime(s.o.Clock.Now().Truncate(1e9))
	return st.write(t.namespace, t.name, func(old *entry) (runtime.Object, error) {
		if old == nil {
			return nil, apierrors.NewNotFound(t.res.gvr.GroupResource(), t.name)
		}
		if rv := m.GetResourceVersion(); rv != "" && rv != old.meta.GetResourceVersion() {
			return nil, apierrors.NewConflict(t.res.gvr.GroupResource(), t.name, errModified)
		}
		if err := settle(t, old, nil, obj); err != nil {
			return nil, err
		}
		m.SetManagedFields(managedFields(req, t.res, obj, metav1.ManagedFieldsOperationUpdate, now, old))
		return obj, nil
	})
}

// patch applies a strategic merge, JSON merge or JSON patch to the stored object: 200, 404, or 409
// if the patch sets a uid or resourceVersion that is not the stored one's (a kubelet's node status
// patch carries its Node's uid as such a precondition).
func (s *Server) patch(req *http.Request, body []byte, st *store, t target) (*entry, int, error) {
	pt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	now := metav1.NewTime(s.o.Clock.Now().Truncate(1e9))
	return st.write(t.namespace, t.name, func(old *entry) (runtime.Object, error) {
		if old == nil {
			return nil, apierrors.NewNotFound(t.res.gvr.GroupResource(), t.name)
		}
		was, err := old.object()
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var patched []byte
		var obj runtime.Object
		switch types.PatchType(pt) {
		case types.StrategicMergePatchType:
			// A lean Node's decoded copy is the patch's own to change.
			if node, ok := was.(*corev1.Node); ok && heartbeatShortcut && old.obj == nil && t.subresource == "status" && heartbeat(body, node) {
				obj = node
				break
			}
			patched, err = strategicpatch.StrategicMergePatch(old.jsonOf(was), body, was)
		case types.MergePatchType:
			patched, err = jsonpatch.MergePatch(old.jsonOf(was), body)
		case types.JSONPatchType:
			var p jsonpatch.Patch
			if p, err = jsonpatch.DecodePatch(body); err == nil {
				patched, err = p.Apply(old.jsonOf(was))
			}
		default:
			return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", t.res.gvr.GroupResource(), t.name,
				fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
					types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType), 0, false)
		}
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if obj == nil {
			if obj, err = newObject(t.res); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			if err := json.Unmarshal(patched, obj); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		}
		m := mustAccessor(obj)
		if m.GetUID() != old.meta.GetUID() {
			return nil, apierrors.NewConflict(t.res.gvr.GroupResource(), t.name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", m.GetUID(), old.meta.GetUID()))
		}
		if m.GetResourceVersion() != old.meta.GetResourceVersion() {
			return nil, apierrors.NewConflict(t.res.gvr.GroupResource(), t.name, errModified)
		}
		if err := settle(t, old, was, obj); err != nil {
			return nil, err
		}
		m.SetManagedFields(managedFields(req, t.res, obj, metav1.ManagedFieldsOperationUpdate, now, old))
		return obj, nil
	})
}

// settle keeps what a write cannot change, as the apiserver's strategies do: the uid and creation
// time; for Nodes and Pods, the status on a write of the object and the spec on a write of its
// status, from was, the old object if the caller has it, or old's.
func settle(t target, old *entry, was, obj runtime.Object) error {
	m := mustAccessor(obj)
	if m.GetUID() != "" && m.GetUID() != old.meta.GetUID() {
		return apierrors.NewConflict(t.res.gvr.GroupResource(), t.name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", m.GetUID(), old.meta.GetUID()))
	}
	m.SetUID(old.meta.GetUID())
	m.SetCreationTimestamp(old.meta.GetCreationTimestamp())
	m.SetGeneration(old.meta.GetGeneration())
	status := t.subresource == "status"
	if t.subresource != "" && !status {
		return apierrors.NewNotFound(t.res.gvr.GroupResource(), t.name+"/"+t.subresource)
	}
	switch obj.(type) {
	case *corev1.Node, *corev1.Pod:
	default:
		return nil
	}
	if was == nil {
		var err error
		if was, err = old.object(); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	switch o := obj.(type) {
	case *corev1.Node:
		was := was.(*corev1.Node)
		keepOther(status, &o.Spec, &was.Spec, &o.Status, &was.Status)
	case *corev1.Pod:
		was := was.(*corev1.Pod)
		keepOther(status, &o.Spec, &was.Spec, &o.Status, &was.Status)
	}
	return nil
}

// keepOther keeps the spec of a write of the status, and the status of a write of the object. It
// takes the old ones by pointer: by value, copies of both sat in settle's frame, on the stack of
// every write, which a request's fresh goroutine then had to grow.
func keepOther[Spec, Status any](status bool, spec, oldSpec *Spec, st, oldStatus *Status) {
	if status {
		*spec = *oldSpec
	} else {
		*st = *oldStatus
	}
}

// remove deletes an object: 200 with a Status, 404, or 409 on a failed precondition. The object goes
// at once, as a pod deleted with grace period 0 (a kubelet's last DELETE) does.
func (s *Server) remove(req *http.Request, st *store, t target) (*entry, int, error) {
	opts, err := deleteOptions(req)
	if err != nil {
		return nil, 0, err
	}
	e, _, err := st.write(t.namespace, t.name, func(old *entry) (runtime.Object, error) {
		if old == nil {
			return nil, apierrors.NewNotFound(t.res.gvr.GroupResource(), t.name)
		}
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != old.meta.GetUID() {
				return nil, apierrors.NewConflict(t.res.gvr.GroupResource(), t.name,
					fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, old.meta.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != old.meta.GetResourceVersion() {
				return nil, apierrors.NewConflict(t.res.gvr.GroupResource(), t.name, errModified)
			}
		}
		return nil, nil
	})
	return e, http.StatusOK, err
}

// removeAll is a deletecollection: every object its selectors match goes.
func (s *Server) removeAll(w http.ResponseWriter, req *http.Request, st *store, t target, asJSON bool) int {
	sel, err := parseSelector(t.res, req.URL.Query())
	if err != nil {
		return s.fail(w, req, asJSON, err)
	}
	items, _ := st.list(t.namespace, sel)
	for _, e := range items {
		_, _, _ = st.write(e.meta.GetNamespace(), e.meta.GetName(), func(old *entry) (runtime.Object, error) {
			if old == nil {
				return nil, apierrors.NewNotFound(t.res.gvr.GroupResource(), e.meta.GetName())
			}
			return nil, nil
		})
	}
	st2 := metav1.Status{Status: metav1.StatusSuccess}
	return s.writeStatus(w, asJSON, &st2, http.StatusOK)
}

func (s *Server) writeStatus(w http.ResponseWriter, asJSON bool, st *metav1.Status, code int) int {
	st.Kind, st.APIVersion = "Status", "v1"
	var body []byte
	if asJSON {
		body, _ = json.Marshal(st)
	} else {
		raw, _ := st.Marshal()
		body = envelope("v1", "Status", raw)
	}
	s.answer(w, code, contentType(asJSON), body)
	return code
}

// seedNamespace creates a namespace an apiserver starts with.
func (s *Server) seedNamespace(name string) error {
	st := s.stores[resourcePath("", "v1", "namespaces")]
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uuid.NewUUID(),
		CreationTimestamp: metav1.NewTime(s.o.Clock.Now().Truncate(1e9))}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	_, _, err := st.write("", name, func(*entry) (runtime.Object, error) { return ns, nil })
	return err
}

// resourceVersionOf is an entry's resourceVersion as the wire carries it.
func resourceVersionOf(rv uint64) string { return strconv.FormatUint(rv, 10) }
