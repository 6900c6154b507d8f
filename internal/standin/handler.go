package standin

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

const (
	protobufType = "application/vnd.kubernetes.protobuf"
	jsonType     = "application/json"
	textType     = "text/plain; charset=utf-8"
	// maxBody is the apiserver's limit on a request body (3 MB, its etcd object limit and more).
	maxBody = 3 << 20
)

// ServeHTTP answers one request as kube-apiserver would.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != s.bearer {
		s.fail(w, r, false, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	switch r.URL.Path {
	case "/version":
		v := version.Info{Major: "1", Minor: "37", GitVersion: GitVersion, Platform: "linux/amd64"}
		b, _ := json.Marshal(v)
		s.answer(w, http.StatusOK, jsonType, b)
		return
	case "/healthz", "/readyz", "/livez":
		s.answer(w, http.StatusOK, textType, []byte("ok"))
		return
	case "/metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		s.counts.write(w)
		return
	}
	asJSON := !acceptsProtobuf(r.Header.Get("Accept"))
	t, ok := s.parsePath(r.URL.Path)
	if !ok {
		s.fail(w, r, asJSON, apierrors.NewNotFound(unservedResource(r.URL.Path), ""))
		return
	}
	verb, code := s.serve(w, r, t, asJSON)
	s.counts.add(verb, t.res.gvr.Resource, t.subresource, code)
}

// serve answers a request for a served resource and returns the verb and status code the
// apiserver's metrics would count it under.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, t target, asJSON bool) (string, int) {
	st := t.store
	var e *entry
	var code int
	var err error
	verb := r.Method
	switch {
	case r.Method == http.MethodGet && t.name == "":
		if q := r.URL.Query(); q.Get("watch") == "true" || q.Get("watch") == "1" {
			return "WATCH", s.watch(w, r, st, t, asJSON)
		}
		return "LIST", s.list(w, r, st, t, asJSON)
	case r.Method == http.MethodGet:
		if e = st.get(t.namespace, t.name); e == nil {
			err = apierrors.NewNotFound(t.res.gvr.GroupResource(), t.name)
		}
		code = http.StatusOK
	case r.Method == http.MethodPost && t.res.review != nil:
		return verb, s.review(w, r, t, asJSON)
	case r.Method == http.MethodPost && t.subresource == "token" && t.res.gvr.Resource == "serviceaccounts":
		return verb, s.tokenRequest(w, r, t, asJSON)
	case r.Method == http.MethodPost && t.name == "":
		e, code, err = s.write(r, maxBody+1, func(body []byte) (*entry, int, error) { return s.create(r, body, st, t) })
	case r.Method == http.MethodPut && t.name != "":
		e, code, err = s.write(r, maxBody+1, func(body []byte) (*entry, int, error) { return s.update(r, body, st, t) })
	case r.Method == http.MethodPatch && t.name != "":
		e, code, err = s.write(r, maxBody, func(body []byte) (*entry, int, error) { return s.patch(r, body, st, t) })
	case r.Method == http.MethodDelete && t.name != "":
		e, code, err = s.remove(r, st, t)
		s.hold(r)
	case r.Method == http.MethodDelete:
		return "DELETE", s.removeAll(w, r, st, t, asJSON)
	default:
		err = apierrors.NewMethodNotSupported(t.res.gvr.GroupResource(), strings.ToLower(r.Method))
	}
	if err != nil {
		return verb, s.fail(w, r, asJSON, err)
	}
	s.answer(w, code, contentType(asJSON), e.body(asJSON))
	return verb, code
}

// hold waits Options.WriteLatency before a write is answered, or until its client gives up.
func (s *Server) hold(r *http.Request) {
	if s.o.WriteLatency <= 0 {
		return
	}
	t := s.o.Clock.NewTimer(s.o.WriteLatency)
	defer t.Stop()
	select {
	case <-t.C():
	case <-r.Context().Done():
	}
}

// answer writes a whole response with the headers an apiserver sends with every answer.
func (s *Server) answer(w http.ResponseWriter, code int, contentType string, body []byte) {
	s.setHeaders(w.Header(), contentType)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// setHeaders sets the headers of every answer, a watch's too.
func (s *Server) setHeaders(h http.Header, contentType string) {
	h["Content-Type"] = contentTypeValue(contentType)
	h["Audit-Id"] = []string{s.auditID()}
	h["Cache-Control"] = cacheControl
	h["X-Kubernetes-Pf-Flowschema-Uid"] = flowSchemaUID
	h["X-Kubernetes-Pf-Prioritylevel-Uid"] = priorityLevelUID
}

// The apiserver's constant headers, made once. Its flow schema and priority level are the ones
// every request of a kubelet would match (system-nodes); their UIDs are fixed here. The header
// map's values are shared, never changed: x/net copies them when the handler writes its header.
var (
	cacheControl     = []string{"no-cache, private"}
	flowSchemaUID    = []string{"0c5f6aa2-5fd3-4e9c-9ab2-3d4e41c2b7a1"}
	priorityLevelUID = []string{"7d4b9b1e-2b8e-4f0b-a6a2-cc9c6a0e6a53"}

	contentTypeValues = map[string][]string{}
)

func init() {
	for _, ct := range []string{protobufType, jsonType, protobufType + ";stream=watch", textType} {
		contentTypeValues[ct] = []string{ct}
	}
}

func contentTypeValue(ct string) []string {
	if v, ok := contentTypeValues[ct]; ok {
		return v
	}
	return []string{ct}
}

// auditID is a fresh ID of a UUID's length for each answer, as the apiserver's Audit-Id: the
// count's top 16 bits, then its low 48, in hex.
func (s *Server) auditID() string {
	n := s.audit.Add(1)
	b := [36]byte{8: '-', 9: '0', 10: '0', 11: '0', 12: '0', 13: '-', 14: '4', 15: '0', 16: '0', 17: '0', 18: '-', 19: '8', 20: '0', 21: '0', 22: '0', 23: '-'}
	putHex(b[0:8], n>>48)
	putHex(b[24:36], n&0xffffffffffff)
	return string(b[:])
}

// putHex writes v in lowercase hex, zero-padded to fill b.
func putHex(b []byte, v uint64) {
	const digits = "0123456789abcdef"
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
}

// fail answers err as the apiserver does, a metav1.Status in the negotiated type, and returns its code.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, asJSON bool, err error) int {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	return s.writeStatus(w, asJSON, &st, code)
}

func contentType(asJSON bool) string {
	if asJSON {
		return jsonType
	}
	return protobufType
}

// acceptsProtobuf tells whether an Accept header's first type the stand-in serves is protobuf, as
// client-go's protobuf clients ask for it ("application/vnd.kubernetes.protobuf,application/json").
// What every client of a fleet sends is known without parsing it.
func acceptsProtobuf(accept string) bool {
	switch accept {
	case protobufType + "," + jsonType:
		return true
	case jsonType, "":
		return false
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case protobufType:
			return true
		case jsonType, "*/*", "application/*":
			return false
		}
	}
	return false
}

// unservedResource names what a path that no served resource matches asks for, for its 404.
func unservedResource(path string) schema.GroupResource {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	return schema.GroupResource{Resource: parts[len(parts)-1]}
}
