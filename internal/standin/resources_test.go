package standin

import (
	"strings"
	"testing"
)

// TestParsePathReadsWhatSplitReads: parsePath cuts a path where strings.Split would, empty
// segments and too many of them included, so that every path names what it named when it was split.
func TestParsePathReadsWhatSplitReads(t *testing.T) {
	s := New(Options{})
	split := func(p string) (target, bool) { // parsePath as it was, with strings.Split
		var t target
		var group, version string
		var segs []string
		switch {
		case strings.HasPrefix(p, "/api/"):
			parts := strings.Split(strings.Trim(p[len("/api/"):], "/"), "/")
			version, segs = parts[0], parts[1:]
		case strings.HasPrefix(p, "/apis/"):
			parts := strings.Split(strings.Trim(p[len("/apis/"):], "/"), "/")
			if len(parts) < 2 {
				return t, false
			}
			group, version, segs = parts[0], parts[1], parts[2:]
		default:
			return t, false
		}
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
	for _, p := range []string{
		"/api/v1/nodes", "/api/v1/nodes/n1", "/api/v1/nodes/n1/status", "/api/v1/nodes/n1/status/x", "/api/v1/nodes/",
		"/api/v1//nodes", "/api/v1/nodes//status", "/api/", "/api/v1", "/api/v1/", "/api//v1/nodes", "/api",
		"/api/v1/namespaces/default/pods", "/api/v1/namespaces/default/pods/p1/status", "/api/v1/namespaces/default/pods/p1/status/x",
		"/api/v1/namespaces/default/pods/p1/a/b/c", "/api/v1/namespaces", "/api/v1/namespaces/default", "/api/v1/pods",
		"/api/v1/namespaces//pods", "/api/v1/namespaces/default/serviceaccounts/sa/token",
		"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
		"/apis/coordination.k8s.io", "/apis/coordination.k8s.io/", "/apis/coordination.k8s.io/v1", "/apis/", "/apis//v1/leases",
		"/apis/storage.k8s.io/v1/csinodes/n1", "/apis/x.example/v1/things", "/version", "/",
	} {
		want, wantOK := split(p)
		got, ok := s.parsePath(p)
		if got != want || ok != wantOK {
			t.Errorf("parsePath(%q) = %+v, %v; strings.Split reads %+v, %v", p, got, ok, want, wantOK)
		}
	}
}
