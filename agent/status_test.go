package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/conditions"
)

func patchesOf(calls []call) []call {
	var out []call
	for _, c := range calls {
		if c.verb == "patch" && c.res == "nodes/status" {
			out = append(out, c)
		}
	}
	return out
}

func TestFiveMinutePatchCarriesHeartbeatTimesOnly(t *testing.T) {
	h := newHarness(t)
	h.agent("fakelet-00000", 0).Start(h.ctx)
	h.advance(6 * time.Minute)
	patches := patchesOf(h.take())
	if len(patches) != 2 {
		t.Fatalf("got %d status patches, want 2", len(patches))
	}
	var body map[string]any
	if err := json.Unmarshal(patches[1].patch, &body); err != nil {
		t.Fatal(err)
	}
	status, _ := body["status"].(map[string]any)
	// The Node's UID is the one field beyond the kubelet's patch: a precondition (withUID).
	meta, _ := body["metadata"].(map[string]any)
	if len(body) != 2 || status == nil || len(meta) != 1 || meta["uid"] != "uid-1" {
		t.Fatalf("patch %s touches more than the status and the node's UID", patches[1].patch)
	}
	keys := make([]string, 0, len(status))
	for k := range status {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"$setElementOrder/conditions", "conditions"}) {
		t.Fatalf("patch status keys %v, want only the conditions and their order: %s", keys, patches[1].patch)
	}
	conds := status["conditions"].([]any)
	if len(conds) != 4 {
		t.Fatalf("patch has %d conditions, want 4: %s", len(conds), patches[1].patch)
	}
	for _, c := range conds {
		m := c.(map[string]any)
		if len(m) != 2 || m["type"] == nil || m["lastHeartbeatTime"] == nil {
			t.Errorf("condition patch %v, want type and lastHeartbeatTime only", m)
		}
	}
	if n := len(patches[1].patch) - len(`"metadata":{"uid":"uid-1"},`); n < 300 || n > 500 {
		t.Errorf("heartbeat patch is %d bytes besides the UID, a kubelet's is about 410", n)
	}
}

func TestStatusModePatchesEveryUpdatePeriodWithoutLease(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Heartbeat.Mode = heartbeat.ModeStatus })
	h.agent("fakelet-00000", 0).Start(h.ctx)
	h.advance(time.Minute + 50*time.Millisecond)
	calls := h.take()
	for _, c := range calls {
		if c.res == "leases" {
			t.Fatalf("status mode sent a lease request: %v", c)
		}
	}
	patches := patchesOf(calls)
	// syncs at 0.1 + k*10.2 s up to 60.05 s: k = 0..5.
	if len(patches) != 6 {
		t.Fatalf("got %d status patches in a minute, want 6: %v", len(patches), patches)
	}
	for i := 1; i < len(patches); i++ {
		if d := patches[i].at - patches[i-1].at; d != 10200*time.Millisecond {
			t.Errorf("patch %d came %v after the previous one, want 10.2 s", i, d)
		}
	}
}

func TestHealthChangeIsPatchedAtTheNextSync(t *testing.T) {
	h := newHarness(t)
	a := h.agent("fakelet-00000", 0)
	a.Start(h.ctx)
	h.advance(time.Second)
	h.take()
	a.SetHealth(func(s *Health) {
		s.NotReady, s.NotReadyMsg = true, "container runtime network not ready"
		s.DiskPressure = true
	})
	h.advance(11 * time.Second)
	patches := patchesOf(h.take())
	if len(patches) != 1 || patches[0].at != 10300*time.Millisecond {
		t.Fatalf("status patches %v, want one at the next sync, 10.3 s", patches)
	}
	n := h.node("fakelet-00000")
	ready := conditions.Node(n.Status.Conditions, corev1.NodeReady)
	if ready.Status != corev1.ConditionFalse || ready.Reason != "KubeletNotReady" || ready.Message != "container runtime network not ready" {
		t.Errorf("Ready condition %+v, want False KubeletNotReady with the given message", ready)
	}
	if !ready.LastTransitionTime.Time.Equal(t0.Add(10 * time.Second)) { // metav1.Time keeps seconds
		t.Errorf("Ready transition time %v, want the sync's time", ready.LastTransitionTime)
	}
	disk := conditions.Node(n.Status.Conditions, corev1.NodeDiskPressure)
	if disk.Status != corev1.ConditionTrue || disk.Reason != "KubeletHasDiskPressure" {
		t.Errorf("DiskPressure condition %+v, want True KubeletHasDiskPressure", disk)
	}
	var types []corev1.NodeConditionType
	for _, c := range n.Status.Conditions {
		types = append(types, c.Type)
	}
	if !reflect.DeepEqual(types, conditionTypes[:]) {
		t.Errorf("conditions in order %v, want the kubelet's %v", types, conditionTypes)
	}
}

func TestRegisteredNodeLooksLikeAKubeletsNode(t *testing.T) {
	h := newHarness(t, withTemplate(t, TemplateOptions{Fleet: "test", Images: MaxImages, Labels: map[string]string{"example.com/pool": ""}}))
	a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: h.client.CoordinationV1()}, "fakelet-00007", 7, "zone-2")
	a.Start(h.ctx)
	h.advance(time.Second)
	n := h.node("fakelet-00007")
	for k, v := range map[string]string{
		"kubernetes.io/hostname": "fakelet-00007", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", fleetname.Label: "test",
		ZoneLabel: "zone-2", "example.com/pool": "",
	} {
		if got, ok := n.Labels[k]; !ok || got != v {
			t.Errorf("label %s=%q, want %q", k, got, v)
		}
	}
	if n.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] != "true" {
		t.Errorf("annotations %v lack the kubelet's attach-detach annotation", n.Annotations)
	}
	if n.Spec.ProviderID != "fakelet://fakelet-00007" {
		t.Errorf("providerID %q", n.Spec.ProviderID)
	}
	if got := n.Status.Addresses; len(got) != 2 || got[0].Address != "10.128.0.8" || got[1].Address != "fakelet-00007" {
		t.Errorf("addresses %v, want InternalIP 10.128.0.8 and the hostname", got)
	}
	if len(n.Status.Images) != MaxImages || n.Status.NodeInfo.KubeletVersion != KubeletVersion ||
		n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 || n.Status.Capacity.Pods().Value() != 110 {
		t.Errorf("status lacks kubelet detail: %d images, %+v", len(n.Status.Images), n.Status.NodeInfo)
	}
	raw, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 10_000 || len(raw) > 15_000 {
		t.Errorf("a Node with 50 images is %d bytes of JSON, a kubelet's is about 12 KB", len(raw))
	}
}

// TestReplacedNodeIsNeverPatched: the agent's Node is deleted and another created in its place by
// someone else, with the fleet's label. A kubelet would patch the new Node's status; the agent's patch
// carries the UID of the Node it registered, which the apiserver's validation refuses for another
// Node (here a reactor refuses it as the apiserver does), so the other Node is never written to.
func TestReplacedNodeIsNeverPatched(t *testing.T) {
	h := newHarness(t)
	h.client.PrependReactor("patch", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		var body struct {
			Metadata struct{ UID types.UID } `json:"metadata"`
		}
		if err := json.Unmarshal(action.(k8stesting.PatchAction).GetPatch(), &body); err != nil || body.Metadata.UID == "" {
			return false, nil, err
		}
		stored, err := h.client.Tracker().Get(action.GetResource(), "", action.(k8stesting.PatchAction).GetName())
		if err != nil {
			return true, nil, err
		}
		if uid := stored.(*corev1.Node).UID; uid != body.Metadata.UID {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, stored.(*corev1.Node).Name,
				field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), body.Metadata.UID, "field is immutable")})
		}
		return false, nil, nil
	})
	const name = "fakelet-00000"
	a := h.agent(name, 0)
	a.Start(h.ctx)
	h.advance(30 * time.Second)
	ctx := context.Background()
	if err := h.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "theirs", Labels: map[string]string{fleetname.Label: "test"}}}
	if _, err := h.client.CoreV1().Nodes().Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.take()
	a.SetHealth(func(hl *Health) { hl.NotReady = true })
	h.advance(time.Minute)
	got, err := h.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != "theirs" || len(got.Status.Conditions) != 0 || len(got.Annotations) != 0 {
		t.Errorf("the other Node was written to: uid %s, %d conditions, annotations %v", got.UID, len(got.Status.Conditions), got.Annotations)
	}
}
