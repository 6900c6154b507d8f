package fidelity

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Lines in the shape kube-apiserver v1.37 writes them with --audit-log-format=json at Metadata level
// (trimmed of fields the package does not read).
const (
	hollowLeaseGet = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/hollow-00000?timeout=10s","verb":"get","user":{"username":"system:node:hollow-00000","groups":["system:nodes","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"hollow-kubelet","objectRef":{"resource":"leases","namespace":"kube-node-lease","name":"hollow-00000","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"hollow-00000\" not found","reason":"NotFound","details":{"name":"hollow-00000","group":"coordination.k8s.io","kind":"leases"},"code":404},"requestReceivedTimestamp":"2026-12-01T09:30:00.100000Z","stageTimestamp":"2026-12-01T09:30:00.102000Z"}`
	fakeletPatch   = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"b1","stage":"ResponseComplete","requestURI":"/api/v1/nodes/fakelet-00000/status","verb":"patch","user":{"username":"fakelet-admin","groups":["system:masters","system:authenticated"]},"impersonatedUser":{"username":"system:node:fakelet-00000","groups":["system:nodes","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubelet/v1.37.2 (linux/amd64) fakelet","objectRef":{"resource":"nodes","name":"fakelet-00000","apiVersion":"v1","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T09:30:01.000000Z","stageTimestamp":"2026-12-01T09:30:01.004000Z"}`
	// A streaming list: logged when it starts and again when it ends.
	hollowWatchStarted  = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c1","stage":"ResponseStarted","requestURI":"/api/v1/pods?allowWatchBookmarks=true\u0026fieldSelector=spec.nodeName%3Dhollow-00000\u0026resourceVersionMatch=NotOlderThan\u0026sendInitialEvents=true\u0026timeoutSeconds=491\u0026watch=true","verb":"watch","user":{"username":"system:node:hollow-00000","groups":["system:nodes","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"hollow-kubelet","objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T09:30:02.000000Z","stageTimestamp":"2026-12-01T09:30:02.001000Z"}`
	hollowWatchComplete = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c1","stage":"ResponseComplete","requestURI":"/api/v1/pods?allowWatchBookmarks=true\u0026fieldSelector=spec.nodeName%3Dhollow-00000\u0026resourceVersionMatch=NotOlderThan\u0026sendInitialEvents=true\u0026timeoutSeconds=491\u0026watch=true","verb":"watch","user":{"username":"system:node:hollow-00000","groups":["system:nodes","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"hollow-kubelet","objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T09:30:02.000000Z","stageTimestamp":"2026-12-01T09:38:13.001000Z"}`
	hollowRewatch       = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c2","stage":"ResponseStarted","requestURI":"/api/v1/pods?allowWatchBookmarks=true\u0026fieldSelector=spec.nodeName%3Dhollow-00000\u0026resourceVersion=812\u0026timeoutSeconds=377\u0026watch=true","verb":"watch","user":{"username":"system:node:hollow-00000","groups":["system:nodes","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"hollow-kubelet","objectRef":{"resource":"pods","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T09:38:13.100000Z","stageTimestamp":"2026-12-01T09:38:13.101000Z"}`
	hollowDiscovery     = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"d1","stage":"ResponseComplete","requestURI":"/apis/storage.k8s.io/v1?timeout=32s","verb":"get","user":{"username":"system:node:hollow-00000","groups":["system:nodes","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"hollow-kubelet","responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T09:30:00.050000Z","stageTimestamp":"2026-12-01T09:30:00.051000Z"}`
	// The fleet's own watch of its Nodes: the admin, not impersonated.
	fleetWatch = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"e1","stage":"ResponseStarted","requestURI":"/api/v1/nodes?allowWatchBookmarks=true\u0026labelSelector=fakelet.dev%2Ffleet%3Dreference\u0026resourceVersionMatch=NotOlderThan\u0026sendInitialEvents=true\u0026watch=true","verb":"watch","user":{"username":"fakelet-admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubelet/v1.37.2 (linux/amd64) fakelet","objectRef":{"resource":"nodes","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T09:29:59.000000Z","stageTimestamp":"2026-12-01T09:29:59.001000Z"}`
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestReadAudit(t *testing.T) {
	log := strings.Join([]string{fleetWatch, hollowDiscovery, hollowLeaseGet, fakeletPatch, hollowWatchStarted, hollowWatchComplete, hollowRewatch}, "\n") + "\n"
	reqs, err := ReadAudit(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{
		{Node: "", UserAgent: "kubelet/v1.37.2 (linux/amd64) fakelet", Class: Class{VerbWatchList, "nodes", ""}, At: at("2026-12-01T09:29:59Z"), Code: 200},
		{Node: "hollow-00000", UserAgent: "hollow-kubelet", Class: Class{"get", "/apis/storage.k8s.io/v1", ""}, At: at("2026-12-01T09:30:00.05Z"), Code: 200},
		{Node: "hollow-00000", UserAgent: "hollow-kubelet", Class: Class{"get", "leases", ""}, At: at("2026-12-01T09:30:00.1Z"), Code: 404},
		{Node: "fakelet-00000", Impersonated: true, UserAgent: "kubelet/v1.37.2 (linux/amd64) fakelet", Class: Class{"patch", "nodes", "status"}, At: at("2026-12-01T09:30:01Z"), Code: 200},
		{Node: "hollow-00000", UserAgent: "hollow-kubelet", Class: Class{VerbWatchList, "pods", ""}, At: at("2026-12-01T09:30:02Z"), Code: 200},
		{Node: "hollow-00000", UserAgent: "hollow-kubelet", Class: Class{"watch", "pods", ""}, At: at("2026-12-01T09:38:13.1Z"), Code: 200},
	}
	if len(reqs) != len(want) {
		t.Fatalf("got %d requests, want %d: %+v", len(reqs), len(want), reqs)
	}
	for i := range want {
		if got := reqs[i]; got != want[i] {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
}

func TestReadAuditCutShort(t *testing.T) {
	// A crash mid-write leaves a partial last line: skipped. A bad line in the middle is an error.
	cut := hollowLeaseGet + "\n" + fakeletPatch[:80]
	reqs, err := ReadAudit(strings.NewReader(cut))
	if err != nil || len(reqs) != 1 {
		t.Errorf("cut-off log: %d requests, %v; want 1 and no error", len(reqs), err)
	}
	bad := hollowLeaseGet + "\nnot json\n" + fakeletPatch + "\n"
	if _, err := ReadAudit(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v, want an error naming line 2", err)
	}
	if _, err := ReadAudit(strings.NewReader(`{"kind":"Status"}` + "\n")); err == nil || !strings.Contains(err.Error(), "not an audit event") {
		t.Errorf("not an event: %v", err)
	}
}

func TestClassString(t *testing.T) {
	for _, c := range []Class{{"patch", "nodes", "status"}, {VerbWatchList, "pods", ""}, {"get", "/apis/storage.k8s.io/v1", ""}} {
		back, ok := ParseClass(c.String())
		if !ok || back != c {
			t.Errorf("%q reads back as %+v", c.String(), back)
		}
	}
	if _, ok := ParseClass("get"); ok {
		t.Error(`ParseClass("get") succeeded`)
	}
}

// testdata/audit.log holds lines of a reference run's audit log as kube-apiserver v1.37.2 wrote
// them: a hollow kubelet's Lease GET (404), a fakelet agent's status patch (impersonated), the
// hollow kubelet's streaming list of its pods (logged when it started and when it ended), the
// fleet's watch of its Nodes and the apiserver's own discovery GET.
func TestReadRecordedAudit(t *testing.T) {
	f, err := os.Open("testdata/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reqs, err := ReadAudit(f)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		node         string
		impersonated bool
		class        string
		code         int
		userAgent    string
	}
	want := []seen{
		{"hollow-00000", false, "get leases", 404, "hollow-kubelet"},
		{"fakelet-00000", true, "patch nodes/status", 200, "kubelet/v1.37.2 (linux/amd64) fakelet"},
		{"hollow-00000", false, "watch-list pods", 200, "hollow-kubelet"},
		{"", false, "watch-list nodes", 200, "fakelet"},
		{"", false, "get /openapi/v3", 200, "kube-apiserver/v1.37.2 (linux/amd64) kubernetes/unknown"},
	}
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d (the watch once): %+v", len(reqs), len(want), reqs)
	}
	for i, w := range want {
		r := reqs[i]
		got := seen{r.Node, r.Impersonated, r.Class.String(), r.Code, r.UserAgent}
		if got != w {
			t.Errorf("request %d: got %+v, want %+v", i, got, w)
		}
		if r.At.IsZero() || r.At.Year() != 2026 {
			t.Errorf("request %d: received at %v", i, r.At)
		}
	}
}
