package standin

import (
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resource is one kind the stand-in serves: what a fleet reads, writes or watches, and the reviews
// its preflight asks for.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	apiVersion string // gvr's group and version as a body's apiVersion, made once
	namespaced bool
	// lean kinds are stored as protobuf alone, their typed objects decoded when a write or a JSON
	// answer needs one: a Node's or a Pod's typed object is most of what it costs to hold, and
	// answers and watch events need only its bytes.
	lean bool
	// generation: the apiserver's strategy for the kind sets metadata.generation to 1 at creation
	// (Pods'); for the others it is what the client sent (0 from a kubelet).
	generation bool
	// fields are the field selectors' labels beyond metadata.name and metadata.namespace, as the
	// apiserver's strategy for the kind offers them (GetAttrs).
	fields func(runtime.Object) fields.Set
	// review is a create that is answered, not stored: access and rules reviews, SelfSubjectReview.
	review func(s *Server, in runtime.Object) runtime.Object
}

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

// setKind sets obj's TypeMeta to r's kind, with the apiVersion string r holds rather than one
// made from its group and version at every write.
func (r *resource) setKind(obj runtime.Object) {
	if tm, ok := obj.GetObjectKind().(*metav1.TypeMeta); ok {
		tm.APIVersion, tm.Kind = r.apiVersion, r.kind
		return
	}
	obj.GetObjectKind().SetGroupVersionKind(r.gvk())
}

// path is the key of the resource: its group, version and plural as in its URL.
func (r *resource) path() string { return resourcePath(r.gvr.Group, r.gvr.Version, r.gvr.Resource) }

func resourcePath(group, version, plural string) string { return group + "/" + version + "/" + plural }

func newResource(gvr schema.GroupVersionResource, kind string, namespaced bool) *resource {
	return &resource{gvr: gvr, kind: kind, apiVersion: gvr.GroupVersion().String(), namespaced: namespaced}
}

func core(plural, kind string, namespaced bool) *resource {
	return newResource(schema.GroupVersionResource{Version: "v1", Resource: plural}, kind, namespaced)
}

func grouped(group, version, plural, kind string, namespaced bool) *resource {
	return newResource(schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, kind, namespaced)
}

func withFields(r *resource, f func(runtime.Object) fields.Set) *resource { r.fields = f; return r }

func lean(r *resource) *resource { r.lean = true; return r }

func generation(r *resource) *resource { r.generation = true; return r }

func withReview(r *resource, f func(*Server, runtime.Object) runtime.Object) *resource {
	r.review = f
	return r
}

// resources are the kinds a fleet's agents, its preflight, claim, watches and measurement use.
var resources = []*resource{
	core("namespaces", "Namespace", false),
	lean(withFields(core("nodes", "Node", false), func(o runtime.Object) fields.Set {
		return fields.Set{"spec.unschedulable": boolString(o.(*corev1.Node).Spec.Unschedulable)}
	})),
	generation(lean(withFields(core("pods", "Pod", true), func(o runtime.Object) fields.Set {
		p := o.(*corev1.Pod)
		return fields.Set{"spec.nodeName": p.Spec.NodeName, "spec.schedulerName": p.Spec.SchedulerName,
			"spec.restartPolicy": string(p.Spec.RestartPolicy), "status.phase": string(p.Status.Phase), "status.podIP": p.Status.PodIP}
	}))),
	withFields(core("services", "Service", true), func(o runtime.Object) fields.Set {
		s := o.(*corev1.Service)
		return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
	}),
	core("configmaps", "ConfigMap", true),
	withFields(core("secrets", "Secret", true), func(o runtime.Object) fields.Set {
		return fields.Set{"type": string(o.(*corev1.Secret).Type)}
	}),
	withFields(core("events", "Event", true), func(o runtime.Object) fields.Set {
		e := o.(*corev1.Event)
		return fields.Set{"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.namespace": e.InvolvedObject.Namespace,
			"involvedObject.name": e.InvolvedObject.Name, "involvedObject.uid": string(e.InvolvedObject.UID),
			"reason": e.Reason, "type": e.Type, "source": e.Source.Component}
	}),
	core("serviceaccounts", "ServiceAccount", true),
	grouped("coordination.k8s.io", "v1", "leases", "Lease", true),
	grouped("storage.k8s.io", "v1", "csinodes", "CSINode", false),
	grouped("storage.k8s.io", "v1", "csidrivers", "CSIDriver", false),
	grouped("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false),
	withFields(grouped("certificates.k8s.io", "v1", "podcertificaterequests", "PodCertificateRequest", true), nodeNameField),
	withReview(grouped("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false), allowAccess),
	withReview(grouped("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", false), allowRules),
	withReview(grouped("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", false), func(*Server, runtime.Object) runtime.Object {
		return &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
			Username: benchUser, Groups: []string{"system:masters", "system:authenticated"}}}}
	}),
}

// benchUser is who the stand-in's token authenticates as.
const benchUser = "fakelet-bench"

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// nodeNameField is the spec.nodeName a kubelet selects its PodCertificateRequests by.
func nodeNameField(o runtime.Object) fields.Set {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil
	}
	spec, _ := u["spec"].(map[string]any)
	name, _ := spec["nodeName"].(string)
	return fields.Set{"spec.nodeName": name}
}

// target is what one request's path names.
type target struct {
	res         *resource
	store       *store
	namespace   string
	name        string
	subresource string
}

// parsePath reads /api/v1/... and /apis/GROUP/VERSION/...; ok is false for a path that names no
// served resource.
func (s *Server) parsePath(p string) (t target, ok bool) {
	var group, version, rest string
	switch {
	case strings.HasPrefix(p, "/api/"):
		version, rest, _ = strings.Cut(strings.Trim(p[len("/api/"):], "/"), "/")
	case strings.HasPrefix(p, "/apis/"):
		var more bool
		if group, rest, more = strings.Cut(strings.Trim(p[len("/apis/"):], "/"), "/"); !more {
			return t, false
		}
		version, rest, _ = strings.Cut(rest, "/")
	default:
		return t, false
	}
	var buf [maxSegments + 1]string
	segs := splitSegments(rest, &buf)
	if len(segs) >= 3 && segs[0] == "namespaces" {
		t.namespace, segs = segs[1], segs[2:]
	}
	if len(segs) == 0 || len(segs) > 3 {
		return t, false
	}
	st := s.stores[resourcePath(group, version, segs[0])]
	if st == nil || st.res.namespaced != (t.namespace != "") && !(st.res.namespaced && len(segs) == 1) {
		return t, false
	}
	t.res, t.store = st.res, st
	if len(segs) > 1 {
		t.name = segs[1]
	}
	if len(segs) > 2 {
		t.subresource = segs[2]
	}
	return t, true
}

// maxSegments is the most segments after the version a served path has: namespaces/NS/PLURAL/NAME/SUB.
const maxSegments = 5

// splitSegments is strings.Split(rest, "/") into buf, for a rest that is not empty, and one segment
// more than maxSegments at most (which is one too many): a path is split at every request.
func splitSegments(rest string, buf *[maxSegments + 1]string) []string {
	if rest == "" {
		return nil
	}
	n := 0
	for n < len(buf)-1 {
		seg, more, found := strings.Cut(rest, "/")
		buf[n] = seg
		n++
		if !found {
			return buf[:n]
		}
		rest = more
	}
	buf[n] = rest
	return buf[:n+1]
}
