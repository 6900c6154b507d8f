package transport

import (
	"context"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
)

// TestStatusPatchMatchesClientGo sends each status patch twice, through client-go's generated
// client and through the fleet's leanCore over the wire package, against the same scripted answers:
// the server must see the same requests, and the caller get the same Node or the same error.
func TestStatusPatchMatchesClientGo(t *testing.T) {
	srv := &scriptServer{}
	lean := leanCoreOf(t, srv)
	upstream := lean.CoreV1Interface

	const name = "fakelet-00007"
	patch := []byte(`{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":"2026-11-29T21:00:00Z","type":"Ready"}]}}`)
	stored := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "node-uid", ResourceVersion: "42"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.NewTime(time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC))}}}}
	pb := http.Header{"Content-Type": {Protobuf}}
	status := func(err *apierrors.StatusError) []byte {
		return encode(t, Protobuf, schema.GroupVersion{Version: "v1"}, &err.ErrStatus)
	}
	nodes := schema.GroupResource{Resource: "nodes"}
	throttled := apierrors.NewTooManyRequests("too many requests, please try again later", 0)
	for _, tc := range []struct {
		name   string
		script []answer
	}{
		{"patched", []answer{{code: 200, header: pb, body: encode(t, Protobuf, corev1.SchemeGroupVersion, stored)}}},
		{"not found", []answer{{code: 404, header: pb, body: status(apierrors.NewNotFound(nodes, name))}}},
		{"another uid", []answer{{code: 422, header: pb, body: status(apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, name, nil))}}},
		{"throttled, then patched", []answer{{code: 429, header: pb, body: status(throttled), retryAfter: "0"},
			{code: 200, header: pb, body: encode(t, Protobuf, corev1.SchemeGroupVersion, stored)}}},
		{"text error", []answer{{code: 500, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte("etcd is down\n")}}},
		{"reset stream", []answer{{action: "reset"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patchStatus := func(nodes interface {
				Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.Node, error)
			}) (*corev1.Node, error, *agent.Meter) {
				ctx, meter := agent.RequestContext(context.Background(), name)
				n, err := nodes.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
				return n, err, meter
			}
			srv.play(tc.script...)
			wantNode, wantErr, wantMeter := patchStatus(upstream.Nodes())
			want := srv.requests()
			srv.play(tc.script...)
			gotNode, gotErr, gotMeter := patchStatus(lean.Nodes())
			got := srv.requests()
			if len(got) != len(want) {
				t.Fatalf("client-go sent %d requests and the lean client %d", len(want), len(got))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("request %d differs:\n lean:      %+v\n client-go: %+v", i, got[i], want[i])
				}
			}
			if !sameError(gotErr, wantErr) {
				t.Errorf("error: lean %#v, client-go %#v", gotErr, wantErr)
			}
			if !reflect.DeepEqual(gotNode, wantNode) {
				t.Errorf("node: lean %+v, client-go %+v", gotNode, wantNode)
			}
			gs, gr := gotMeter.Counted()
			ws, wr := wantMeter.Counted()
			if gs != ws || gr != wr {
				t.Errorf("bytes counted: lean %d sent, %d received; client-go %d, %d", gs, gr, ws, wr)
			}
		})
	}
}

// TestStatusPatchAnswerSharesTheTemplatesImages: the answer to an agent's status patch decodes to
// the Node client-go decodes, its images (the fleet's, as the agent sent them) the agent's
// template's own list rather than a copy decoded from every answer.
func TestStatusPatchAnswerSharesTheTemplatesImages(t *testing.T) {
	srv := &scriptServer{}
	lean := leanCoreOf(t, srv)
	tmpl, err := agent.NewTemplate(agent.TemplateOptions{Fleet: "f", Images: agent.MaxImages})
	if err != nil {
		t.Fatal(err)
	}
	const name = "fakelet-00007"
	stored := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "node-uid", ResourceVersion: "42"},
		Status: corev1.NodeStatus{Images: tmpl.Images, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	answer := answer{code: 200, header: http.Header{"Content-Type": {Protobuf}}, body: encode(t, Protobuf, corev1.SchemeGroupVersion, stored)}
	patch := []byte(`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)
	patched := func(nodes corev1client.NodeInterface, tmpl *agent.Template) *corev1.Node {
		t.Helper()
		srv.play(answer)
		ctx, _ := agent.RequestContextOf(context.Background(), name, tmpl)
		n, err := nodes.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	want := patched(lean.CoreV1Interface.Nodes(), tmpl)
	got := patched(lean.Nodes(), tmpl)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("node: lean %+v, client-go %+v", got, want)
	}
	if &got.Status.Images[0] != &tmpl.Images[0] {
		t.Error("the answer's images are decoded, not the template's")
	}
	if n := patched(lean.Nodes(), nil); !reflect.DeepEqual(n, want) || &n.Status.Images[0] == &tmpl.Images[0] {
		t.Error("a request of no agent's template: the answer is not client-go's")
	}
}

// leanCoreOf returns the core client of the fleet's shared heartbeat clients of srv.
func leanCoreOf(t *testing.T, srv *scriptServer) leanCore {
	t.Helper()
	ts := serveTLS(t, srv)
	clients, err := SharedClients(&rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{CAData: certOf(ts)}}, 1, true, new(atomic.Int64), Path{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseWire(clients) })
	lean, ok := clients[0].Core.(leanCore)
	if !ok {
		t.Fatalf("the heartbeat clients' Core is a %T, not the lean one", clients[0].Core)
	}
	return lean
}
