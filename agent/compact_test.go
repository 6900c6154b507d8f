package agent

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/scheduler"
)

// Compact keeps a Node's content and shares what equals the fleet's: the decoded copies can go.
func TestCompactSharesWhatEqualsTheTemplate(t *testing.T) {
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "compact", Images: MaxImages})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Template: tmpl, Heartbeat: kubeletHeartbeat(t), Footprint: FootprintHeartbeat, Scheduler: scheduler.New(testingclock.NewFakeClock(t0))}
	a := New(cfg, Clients{}, "fakelet-00003", 3, "")
	now := metav1.NewTime(t0)
	sent := tmpl.initialNode(a, now, a.health.conditions(nil, now))
	// What the server returns: the same content, every map, slice and string decoded anew.
	b, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	var decoded, kept corev1.Node
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(b, &kept)
	decoded.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	n := tmpl.Compact(&decoded)
	if !equality.Semantic.DeepEqual(n.Status, kept.Status) || !equality.Semantic.DeepEqual(n.Annotations, kept.Annotations) {
		t.Fatal("Compact changed the Node's content")
	}
	if n.ManagedFields != nil {
		t.Error("managed fields kept")
	}
	if !sameSlice(n.Status.Images, tmpl.Images) || !sameMap(n.Status.Capacity, tmpl.Capacity) ||
		!sameMap(n.Status.Allocatable, tmpl.Allocatable) || !sameMap(n.Annotations, tmpl.annotations) {
		t.Error("the image list, resource lists or annotations are not the shared ones")
	}
	if !equality.Semantic.DeepEqual(n.Labels, kept.Labels) {
		t.Fatal("Compact changed the Node's labels")
	}
	for k, v := range n.Labels {
		if unsafe.StringData(k) != unsafe.StringData(tmpl.labelText[k]) {
			t.Errorf("label key %s is the decoded copy, not the template's", k)
		}
		if k != corev1.LabelHostname && unsafe.StringData(v) != unsafe.StringData(tmpl.labelText[v]) {
			t.Errorf("label %s=%s: the value is the decoded copy, not the template's", k, v)
		}
	}
	if statusChanged(&n.Status, &sent.Status) {
		t.Error("the compacted status differs from the one sent")
	}
}

// compactLease keeps a Lease's content and shares the strings all nodes' Leases spell alike.
func TestCompactLeaseSharesCommonStrings(t *testing.T) {
	name := "fakelet-00003"
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace, UID: "u",
			Annotations:     map[string]string{fleetname.RunAnnotation: "run-1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: "n"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "coordination.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name)},
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var decoded coordinationv1.Lease
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "compact", RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	runAnnotations := tmpl.leaseAnnotations
	first := compactLease(l.DeepCopy(), name, tmpl).ManagedFields[0].FieldsV1
	got := compactLease(&decoded, name, tmpl)
	if !equality.Semantic.DeepEqual(got, l) {
		t.Fatalf("compactLease changed the Lease:\n%+v\nwant\n%+v", got, l)
	}
	if reflect.ValueOf(got.Annotations).UnsafePointer() != reflect.ValueOf(runAnnotations).UnsafePointer() {
		t.Error("the run's annotations are the decoded copy, not the shared one")
	}
	m, o := got.ManagedFields[0], got.OwnerReferences[0]
	if m.FieldsV1 != first {
		t.Error("the managed fields' set is the decoded copy, not the first Lease's")
	}
	other := l.DeepCopy()
	other.ManagedFields[0].FieldsV1.Raw = []byte(`{"f:metadata":{}}`)
	if f := compactLease(other, name, tmpl).ManagedFields[0].FieldsV1; string(f.Raw) != `{"f:metadata":{}}` {
		t.Errorf("a Lease with other managed fields got %s", f.Raw)
	}
	for what, pair := range map[string][2]string{
		"name": {got.Name, name}, "holder": {*got.Spec.HolderIdentity, name}, "owner name": {o.Name, name},
		"namespace": {got.Namespace, LeaseNamespace}, "manager": {m.Manager, "kubelet"}, "fields type": {m.FieldsType, "FieldsV1"},
	} {
		if unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("the %s is the decoded copy, not the shared one", what)
		}
	}
}

// An agent keeps one Node a version: a second decoding of the version it keeps (a watch's event for
// its own patch) does not replace it, so the status loop, which knows the kept Node by its pointer,
// is not woken for nothing; a newer version replaces it, and a Node without a resourceVersion (the
// fake clientset's) is always taken.
func TestAgentKeepsOneNodeAVersion(t *testing.T) {
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "compact"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Template: tmpl, Heartbeat: kubeletHeartbeat(t), Footprint: FootprintHeartbeat, Scheduler: scheduler.New(testingclock.NewFakeClock(t0))}
	a := New(cfg, Clients{}, "fakelet-00003", 3, "")
	version := func(rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.Name(), ResourceVersion: rv}}
	}
	a.remember(version("7"))
	kept := a.serverKept()
	a.remember(version("7"))
	a.ObserveNode(version("7"))
	if a.serverKept() != kept {
		t.Error("a second decoding of resourceVersion 7 replaced the agent's Node")
	}
	a.ObserveNode(version("8"))
	if got := a.serverNode().ResourceVersion; got != "8" {
		t.Errorf("kept resourceVersion %s after 8 was observed", got)
	}
	a.remember(version(""))
	kept = a.serverKept()
	a.remember(version(""))
	if a.serverKept() == kept {
		t.Error("Nodes without a resourceVersion were taken for one version")
	}
}
