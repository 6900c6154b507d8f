package standin

import (
	"encoding/json"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
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
