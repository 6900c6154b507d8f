package observe

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// protobufOf encodes obj as the apiserver sends it: the magic, a runtime.Unknown around it.
func protobufOf(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var b bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, coordinationv1.SchemeGroupVersion).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// leanDecoder is the Lease watch's decoder.
func leanDecoder(t testing.TB) runtime.Serializer {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(newLeaseCodecs().SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	return info.Serializer
}

// renewedLease is a Lease as the apiserver stores a kubelet's: its managedFields entry, its owner,
// its holder and durations beside what the watch reads.
func renewedLease() *coordinationv1.Lease {
	holder, duration := "fakelet-00042", int32(40)
	at := metav1.NewMicroTime(time.Date(2026, 12, 2, 8, 0, 0, 123456000, time.UTC))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: holder, Namespace: leaseNamespace, UID: "0b9f6d1c-6a3f-4c55-9d7e-1f1f6a3c2b10", ResourceVersion: "123456",
			CreationTimestamp: metav1.Now(),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: holder, UID: "6f1c2b10-0b9f-4c55-9d7e-1f1f6a3c6d1c"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
				Time: &metav1.Time{Time: at.Time}, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"6f1c2b10\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`)}}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &at},
	}
}

func TestLeaseDecoderReadsWhatTheWatchCompares(t *testing.T) {
	full := renewedLease()
	obj, gvk, err := leanDecoder(t).Decode(protobufOf(t, full), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || gvk == nil || *gvk != leaseKind {
		t.Fatalf("decoded %T as %v, want a Lease", obj, gvk)
	}
	// What the store and the Reflector read: the name, the uid and renewTime, the resourceVersion.
	got := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: l.Namespace, UID: l.UID, ResourceVersion: l.ResourceVersion}}
	want := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: full.Name, Namespace: full.Namespace, UID: full.UID, ResourceVersion: full.ResourceVersion}}
	if !reflect.DeepEqual(got, want) || !l.Spec.RenewTime.Equal(full.Spec.RenewTime) {
		t.Errorf("decoded %+v\nwant what the watch reads of the Lease sent, %+v", l, full)
	}
	if l.ManagedFields != nil || l.Spec.HolderIdentity != nil || l.OwnerReferences != nil {
		t.Errorf("decoded what the watch does not read: %+v", l)
	}
}

// A streaming list's last bookmark is a Lease with only a resourceVersion and the
// initial-events-end annotation, which the Reflector reads to end the list.
func TestLeaseDecoderReadsTheInitialEventsEnd(t *testing.T) {
	end := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "99",
		Annotations: map[string]string{"other": "x", metav1.InitialEventsAnnotationKey: "true"}}}
	obj, _, err := leanDecoder(t).Decode(protobufOf(t, end), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := obj.(*coordinationv1.Lease); l.ResourceVersion != "99" || l.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("bookmark decoded as %+v, want resourceVersion 99 and the initial-events-end annotation", l.ObjectMeta)
	}
}

// A Status, or a list, is not a Lease: client-go's codec decodes it.
func TestLeaseCodecsDecodeAStatusWhole(t *testing.T) {
	dec := leanDecoder(t)
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	var b bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(dec, metav1.SchemeGroupVersion).Encode(status, &b); err != nil {
		t.Fatal(err)
	}
	obj, _, err := dec.Decode(b.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := obj.(*metav1.Status); !ok || s.Code != 410 || s.Reason != metav1.StatusReasonExpired {
		t.Errorf("decoded %#v, want the 410 Status", obj)
	}
}

func TestLeaseDecoderRefusesACutLease(t *testing.T) {
	b := protobufOf(t, renewedLease())
	if _, _, err := leanDecoder(t).Decode(b[:len(b)-3], nil, nil); err == nil {
		t.Error("no error for a Lease cut short")
	}
}

// BenchmarkLeaseDecode is one watch event's Lease, decoded by client-go's protobuf codec whole, as
// the Lease watch did, and by leaseDecoder.
func BenchmarkLeaseDecode(b *testing.B) {
	data := protobufOf(b, renewedLease())
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.WithoutConversion().SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	for _, d := range []struct {
		name string
		dec  runtime.Decoder
	}{
		{"client-go whole", scheme.Codecs.WithoutConversion().DecoderToVersion(info.Serializer, coordinationv1.SchemeGroupVersion)},
		{"lean", newLeaseCodecs().DecoderToVersion(leanDecoder(b), coordinationv1.SchemeGroupVersion)},
	} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.dec.Decode(data, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
