package standin

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// review answers a create that is not stored, with its status filled: 201.
func (s *Server) review(w http.ResponseWriter, req *http.Request, t target, asJSON bool) int {
	in, err := decodeBody(req, t.res)
	if err != nil {
		return s.fail(w, req, asJSON, err)
	}
	return s.answerObject(w, req, t.res, t.res.review(s, in), http.StatusCreated, asJSON)
}

// allowAccess allows whatever a SelfSubjectAccessReview asks: the stand-in authorizes everything.
func allowAccess(_ *Server, in runtime.Object) runtime.Object {
	r := in.(*authorizationv1.SelfSubjectAccessReview)
	r.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "the fakelet stand-in allows every request"}
	return r
}

// allowRules answers a SelfSubjectRulesReview with every verb on everything.
func allowRules(_ *Server, in runtime.Object) runtime.Object {
	r := in.(*authorizationv1.SelfSubjectRulesReview)
	all := []string{"*"}
	r.Status = authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{{Verbs: all, APIGroups: all, Resources: all}},
		NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: all, NonResourceURLs: all}},
	}
	return r
}

// tokenRequest answers a pod's TokenRequest with a token that names nothing, valid as long as asked.
func (s *Server) tokenRequest(w http.ResponseWriter, req *http.Request, t target, asJSON bool) int {
	tokenRes := newResource(authenticationv1.SchemeGroupVersion.WithResource("tokenrequests"), "TokenRequest", true)
	in, err := decodeBody(req, tokenRes)
	if err != nil {
		return s.fail(w, req, asJSON, err)
	}
	tr := in.(*authenticationv1.TokenRequest)
	secs := int64(3600)
	if tr.Spec.ExpirationSeconds != nil {
		secs = *tr.Spec.ExpirationSeconds
	}
	tr.Namespace, tr.Name = t.namespace, t.name
	tr.Status = authenticationv1.TokenRequestStatus{Token: "fakelet-stand-in." + t.namespace + "." + t.name,
		ExpirationTimestamp: metav1.NewTime(s.o.Clock.Now().Add(time.Duration(secs) * time.Second))}
	return s.answerObject(w, req, tokenRes, tr, http.StatusCreated, asJSON)
}

// answerObject encodes an object that is not stored and answers it.
func (s *Server) answerObject(w http.ResponseWriter, req *http.Request, r *resource, obj runtime.Object, code int, asJSON bool) int {
	obj.GetObjectKind().SetGroupVersionKind(r.gvk())
	var body []byte
	if asJSON {
		b, err := json.Marshal(obj)
		if err != nil {
			return s.fail(w, req, asJSON, err)
		}
		body = b
	} else {
		raw, err := obj.(marshaler).Marshal()
		if err != nil {
			return s.fail(w, req, asJSON, err)
		}
		body = envelope(r.apiVersion, r.kind, raw)
	}
	s.answer(w, code, contentType(asJSON), body)
	return code
}

// managedFields is the entry the apiserver's field manager keeps for a writer of a Lease, so that a
// Lease carries as many bytes to and fro as it does from an apiserver: a kubelet's lease controller
// owns its spec, its annotations and labels, and the ownerReference to its Node. Other kinds carry
// none.
func managedFields(req *http.Request, r *resource, obj runtime.Object, op metav1.ManagedFieldsOperationType, at metav1.Time) []metav1.ManagedFieldsEntry {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok || r.gvr.Group != coordinationv1.GroupName {
		return nil
	}
	manager, _, _ := strings.Cut(req.UserAgent(), "/")
	return []metav1.ManagedFieldsEntry{{Manager: manager, Operation: op, APIVersion: r.apiVersion,
		Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: leaseFields(lease)}}}
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
