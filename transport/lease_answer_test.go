package transport

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// sentLease is a Lease as an agent renews it: decoded from an answer, so that every value is one its
// bytes give back, with its renewTime the clock's.
func sentLease(tb testing.TB) (*coordinationv1.Lease, []byte) {
	tb.Helper()
	created := metav1.NewTime(time.Date(2026, 12, 4, 17, 0, 0, 0, time.UTC))
	renewed := metav1.NewTime(time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC))
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007", Namespace: "kube-node-lease", UID: "lease-uid", ResourceVersion: "41",
			CreationTimestamp: created, Annotations: map[string]string{"fakelet.dev/run": "run-1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "fakelet-00007", UID: "node-uid"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
				Time: &renewed, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:renewTime":{}}}`)}}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fakelet-00007"), LeaseDurationSeconds: ptr.To[int32](40)},
	}
	raw, err := l.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	decoded := &coordinationv1.Lease{}
	if err := decoded.Unmarshal(raw); err != nil {
		tb.Fatal(err)
	}
	decoded.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()} // finer than its encoding
	_, raw, err = encodeLeaseRaw(decoded)
	if err != nil {
		tb.Fatal(err)
	}
	return decoded, raw
}

// answers are what a server may answer a renewal with: the Lease sent with a new resourceVersion
// and managed fields' time, and with changes the renewal did not send.
func answers(tb testing.TB, sent *coordinationv1.Lease) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	add := func(name string, change func(*coordinationv1.Lease)) {
		l := sent.DeepCopy()
		l.ResourceVersion = "42"
		later := metav1.NewTime(l.ManagedFields[0].Time.Add(10 * time.Second))
		l.ManagedFields[0].Time = &later
		change(l)
		raw, err := l.Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		out[name] = raw
	}
	add("renewed", func(*coordinationv1.Lease) {})
	add("annotated", func(l *coordinationv1.Lease) { l.Annotations["other"] = "x" })
	add("labelled", func(l *coordinationv1.Lease) { l.Labels = map[string]string{"a": "b"} })
	add("owned by another", func(l *coordinationv1.Lease) { l.OwnerReferences[0].UID = "other" })
	add("another manager", func(l *coordinationv1.Lease) {
		l.ManagedFields = append(l.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply})
	})
	add("held by another", func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("other") })
	add("transitioned", func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = ptr.To[int32](3) })
	add("deleted", func(l *coordinationv1.Lease) {
		now := metav1.Now()
		l.DeletionTimestamp = &now
		l.Finalizers = []string{"f"}
	})
	add("renamed", func(l *coordinationv1.Lease) { l.Name, l.UID, l.Generation = "fakelet-00008", "uid-2", 5 })
	return out
}

// TestAnswerLeaseDecodesAsUnmarshal: a renewal's answer decodes to what Lease.Unmarshal makes of it,
// whatever changed, and the renewal's common answer shares the values it did not change with the
// Lease sent.
func TestAnswerLeaseDecodesAsUnmarshal(t *testing.T) {
	sent, sentRaw := sentLease(t)
	for name, raw := range answers(t, sent) {
		t.Run(name, func(t *testing.T) { checkAnswerLease(t, sent, sentRaw, raw) })
	}
	renewed := answers(t, sent)["renewed"]
	got := &coordinationv1.Lease{}
	reused := *sent // the agent's struct, which serves another renewal once the answer is decoded
	if err := (answerLease{out: got, sent: &reused, sentRaw: sentRaw}).Unmarshal(renewed); err != nil {
		t.Fatal(err)
	}
	reused = coordinationv1.Lease{}
	want := &coordinationv1.Lease{}
	if err := want.Unmarshal(renewed); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("the answer changed with the struct sent: %+v", got)
	}
	if got.Spec.HolderIdentity != sent.Spec.HolderIdentity || &got.OwnerReferences[0] != &sent.OwnerReferences[0] ||
		got.ManagedFields[0].FieldsV1 != sent.ManagedFields[0].FieldsV1 {
		t.Error("the answer to a renewal shares nothing with the Lease sent")
	}
	lean := testing.AllocsPerRun(100, func() { _ = answerLease{out: got, sent: sent, sentRaw: sentRaw}.Unmarshal(renewed) })
	whole := testing.AllocsPerRun(100, func() { _ = got.Unmarshal(renewed) })
	if lean > 4 {
		t.Errorf("the answer to a renewal decoded in %.0f allocations (Unmarshal: %.0f), want at most 4", lean, whole)
	}
}

func checkAnswerLease(t *testing.T, sent *coordinationv1.Lease, sentRaw, raw []byte) {
	t.Helper()
	want := &coordinationv1.Lease{}
	wantErr := want.Unmarshal(raw)
	got := &coordinationv1.Lease{}
	err := answerLease{out: got, sent: sent, sentRaw: sentRaw}.Unmarshal(raw)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("decoded with %v, Unmarshal with %v", err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nUnmarshal made\n%+v", got, want)
	}
}

// FuzzAnswerLease holds answerLease to Lease.Unmarshal for any answer's bytes.
func FuzzAnswerLease(f *testing.F) {
	sent, sentRaw := sentLease(f)
	for _, raw := range answers(f, sent) {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkAnswerLease(t, sent, sentRaw, raw) })
}

// TestRenewedLeasesOwnTheirValues: the wire reads each renewal's answer into a buffer the next
// answer reuses; a Lease decoded from one keeps its values after the next has come.
func TestRenewedLeasesOwnTheirValues(t *testing.T) {
	sent, _ := sentLease(t)
	srv := &scriptServer{}
	lean := leaseClients(t, srv, false)
	pb := http.Header{"Content-Type": {Protobuf}}
	var got []*coordinationv1.Lease
	for _, rv := range []string{"41", "42", "43"} { // the first dials, and is answered off the reader
		stored := sent.DeepCopy()
		stored.ResourceVersion = rv
		stored.UID = types.UID("uid-" + rv)
		srv.play(answer{code: 200, header: pb, body: encode(t, Protobuf, coordinationv1.SchemeGroupVersion, stored)})
		l, err, _ := renewLease(t, lean, sent)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if got[1].ResourceVersion != "42" || got[1].UID != "uid-42" || got[2].ResourceVersion != "43" {
		t.Errorf("a renewal's Lease has resourceVersion %s and uid %s after the next one's answer, want 42 and uid-42", got[1].ResourceVersion, got[1].UID)
	}
}
