package standin

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/protofield"
)

// TestLeanKindsAnswerAsTypedOnes: a Node or a Pod kept as protobuf alone answers every write, read
// and JSON watch event with the bytes it had when it was kept typed: the JSON of an object decoded
// from its protobuf is the JSON of the object written.
func TestLeanKindsAnswerAsTypedOnes(t *testing.T) {
	run := func(lean bool) []byte {
		for _, r := range resources {
			if r.kind == "Node" || r.kind == "Pod" {
				was := r.lean
				r.lean = lean
				defer func() { r.lean = was }()
			}
		}
		return leanScript(t)
	}
	typed, lean := run(false), run(true)
	if !bytes.Equal(typed, lean) {
		t.Errorf("kept lean, the answers are\n%s\nkept typed\n%s", lean, typed)
	}
}

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// leanScript writes, reads and watches a Node and a Pod and returns what the stand-in answered,
// its random uids numbered in order.
func leanScript(t *testing.T) []byte {
	clk := testclock.NewFakeClock(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	s := New(Options{Clock: clk, Bookmarks: time.Hour})
	var out bytes.Buffer
	do := func(method, path, contentType string, asJSON bool, body []byte) []byte {
		r := s.request(method, path, body)
		r.Header.Set("Content-Type", contentType)
		if asJSON {
			r.Header.Set("Accept", jsonType)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		fmt.Fprintf(&out, "%s %s: %d %q\n", method, path, rec.Code, rec.Body.Bytes())
		return rec.Body.Bytes()
	}
	var watches []*recordedWatch
	for _, path := range []string{"/api/v1/nodes?watch=1&resourceVersion=1", "/api/v1/pods?watch=1&resourceVersion=1"} {
		ctx, cancel := context.WithCancel(context.Background())
		w := &recordedWatch{path: path, h: http.Header{}, cancel: cancel, done: make(chan struct{})}
		r := httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx)
		r.Header.Set("Authorization", "Bearer "+s.token)
		r.Header.Set("Accept", jsonType)
		go func() { s.ServeHTTP(w, r); close(w.done) }()
		watches = append(watches, w)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1", "fakelet.dev/fleet": "f"},
		Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{ProviderID: "fakelet://n1", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:        corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("4"), corev1.ResourceMemory: apiresource.MustParse("16Gi")},
			Allocatable:     corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("3900m"), corev1.ResourcePods: apiresource.MustParse("110")},
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.NewTime(clk.Now())}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.128.0.2"}, {Type: corev1.NodeHostName, Address: "n1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{MachineID: "m", KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64"},
			Images:          []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause@sha256:00", "registry.k8s.io/pause:3.10"}, SizeBytes: 320000}},
		}}
	created := do(http.MethodPost, "/api/v1/nodes", protobufType, false, pbOf(t, "v1", "Node", node))
	var n corev1.Node
	unwrap(t, created, &n)
	for i := range 2 {
		clk.Step(time.Minute)
		do(http.MethodPatch, "/api/v1/nodes/n1/status", "application/strategic-merge-patch+json", i == 1, []byte(`{"metadata":{"uid":"`+string(n.UID)+
			`"},"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":"2026-12-04T10:0`+fmt.Sprint(i+1)+`:00Z","type":"Ready"}]}}`))
	}
	do(http.MethodPatch, "/api/v1/nodes/n1", "application/merge-patch+json", true, []byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"unschedulable":true}}`))
	do(http.MethodPatch, "/api/v1/nodes/n1", "application/json-patch+json", false, []byte(`[{"op":"add","path":"/metadata/annotations/x","value":"y"}]`))
	unwrap(t, do(http.MethodGet, "/api/v1/nodes/n1", "", false, nil), &n)
	n.Spec.PodCIDR, n.Status.Phase = "10.1.0.0/24", "Gone"
	do(http.MethodPut, "/api/v1/nodes/n1", protobufType, true, pbOf(t, "v1", "Node", &n))
	n.ResourceVersion = ""
	do(http.MethodPut, "/api/v1/nodes/n1/status", protobufType, true, pbOf(t, "v1", "Node", &n))
	do(http.MethodGet, "/api/v1/nodes/n1", "", true, nil)
	do(http.MethodGet, "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue", "", true, nil)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i", Ports: []corev1.ContainerPort{}}}}}
	do(http.MethodPost, "/api/v1/namespaces/default/pods", protobufType, false, pbOf(t, "v1", "Pod", pod))
	do(http.MethodPatch, "/api/v1/namespaces/default/pods/p1/status", "application/strategic-merge-patch+json", true,
		[]byte(`{"status":{"phase":"Running","podIP":"10.1.0.5","containerStatuses":[{"name":"c","ready":true,"restartCount":0,"image":"i","imageID":"","state":{"running":{"startedAt":"2026-12-04T10:03:00Z"}}}]}}`))
	do(http.MethodGet, "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%3Dn1", "", true, nil)
	do(http.MethodDelete, "/api/v1/namespaces/default/pods/p1", "", true, nil)
	do(http.MethodDelete, "/api/v1/nodes/n1", "", true, nil)
	time.Sleep(50 * time.Millisecond) // the watches' last events
	for _, w := range watches {
		w.cancel()
		<-w.done
		fmt.Fprintf(&out, "watch %s: %q\n", w.path, w.body.Bytes())
	}

	uids := map[string]string{}
	return uuidPattern.ReplaceAllFunc(out.Bytes(), func(u []byte) []byte {
		if _, ok := uids[string(u)]; !ok {
			uids[string(u)] = fmt.Sprintf("uid-%d", len(uids))
		}
		return []byte(uids[string(u)])
	})
}

// recordedWatch is a watch's stream, kept.
type recordedWatch struct {
	path   string
	h      http.Header
	mu     sync.Mutex
	body   bytes.Buffer
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *recordedWatch) Header() http.Header { return w.h }
func (w *recordedWatch) WriteHeader(int)     {}
func (w *recordedWatch) Flush()              {}
func (w *recordedWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(p)
}

func pbOf(t *testing.T, apiVersion, kind string, obj runtime.Object) []byte {
	raw, err := obj.(marshaler).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return envelope(apiVersion, kind, raw)
}

func unwrap(t *testing.T, body []byte, into unmarshaler) {
	t.Helper()
	var u runtime.Unknown
	if err := u.Unmarshal(body[len(protofield.Magic):]); err != nil {
		t.Fatal(err)
	}
	if err := into.Unmarshal(u.Raw); err != nil {
		t.Fatal(err)
	}
}
