package leancodec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// protobufOf encodes obj as the apiserver sends it: the magic, a runtime.Unknown around it.
func protobufOf(t testing.TB, obj runtime.Object, gv schema.GroupVersion) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var b bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, gv).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var configMapKind = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// configMapCodecs decode a ConfigMap as its name alone, and count the raw bytes they were given.
func configMapCodecs(raws *[][]byte) Codecs {
	return New(configMapKind, "test-configmap", func(raw []byte) (runtime.Object, error) {
		*raws = append(*raws, raw)
		var full corev1.ConfigMap
		if err := full.Unmarshal(raw); err != nil {
			return nil, err
		}
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: full.Name}}, nil
	})
}

func serializerOf(t testing.TB, c Codecs) runtime.SerializerInfo {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(c.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no protobuf serializer")
	}
	return info
}

// The kind's objects decoded on their own go to the function, with the bytes inside their envelope;
// decoded into a given object, they are client-go's, as is anything else.
func TestCodecsDecodeTheirKindWithTheirFunction(t *testing.T) {
	var raws [][]byte
	dec := serializerOf(t, configMapCodecs(&raws)).Serializer
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	data := protobufOf(t, cm, corev1.SchemeGroupVersion)

	obj, gvk, err := dec.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := cm.Marshal()
	if got, ok := obj.(*corev1.ConfigMap); !ok || got.Name != "cm" || got.Namespace != "" || gvk == nil || *gvk != configMapKind {
		t.Errorf("decoded %#v as %v, want the function's ConfigMap", obj, gvk)
	}
	if len(raws) != 1 || !bytes.Equal(raws[0], want) {
		t.Errorf("the function was given %q, want the ConfigMap's bytes", raws)
	}

	into := &corev1.ConfigMap{}
	if obj, _, err := dec.Decode(data, nil, into); err != nil || obj != into || !reflect.DeepEqual(into.Data, cm.Data) {
		t.Errorf("decoded into a ConfigMap: %#v, %v; want client-go's whole ConfigMap", obj, err)
	}
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
	if obj, _, err := dec.Decode(protobufOf(t, status, metav1.SchemeGroupVersion), nil, nil); err != nil || obj.(*metav1.Status).Code != 410 {
		t.Errorf("decoded a Status as %#v, %v; want client-go's", obj, err)
	}
	if len(raws) != 1 {
		t.Errorf("the function decoded %d objects, want the one ConfigMap decoded on its own", len(raws))
	}
}

func TestCodecsReturnTheFunctionsError(t *testing.T) {
	bad := errors.New("bad")
	dec := serializerOf(t, New(configMapKind, "test", func([]byte) (runtime.Object, error) { return nil, bad })).Serializer
	if _, _, err := dec.Decode(protobufOf(t, &corev1.ConfigMap{}, corev1.SchemeGroupVersion), nil, nil); err != bad {
		t.Errorf("error %v, want the function's", err)
	}
}

// TestWatchEventDecoderIsTheStreamSerializers: a watch event decodes to what client-go's protobuf
// stream serializer makes of it, its object left in the frame rather than copied out.
func TestWatchEventDecoderIsTheStreamSerializers(t *testing.T) {
	info := serializerOf(t, configMapCodecs(new([][]byte)))
	stock, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	object := protobufOf(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, corev1.SchemeGroupVersion)
	for _, typ := range []string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "SOMETHING"} {
		event := &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: object}}
		var frame bytes.Buffer
		if err := stock.StreamSerializer.Serializer.Encode(event, &frame); err != nil {
			t.Fatal(err)
		}
		var want, got metav1.WatchEvent
		if _, _, err := stock.StreamSerializer.Serializer.Decode(frame.Bytes(), nil, &want); err != nil {
			t.Fatal(err)
		}
		if _, _, err := info.StreamSerializer.Serializer.Decode(frame.Bytes(), nil, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s decoded as %+v, want %+v", typ, got, want)
		}
		if typ == "MODIFIED" {
			allocs := testing.AllocsPerRun(100, func() { _, _, _ = info.StreamSerializer.Serializer.Decode(frame.Bytes(), nil, &got) })
			if allocs > 1 {
				t.Errorf("an event decoded in %.0f allocations, want its kind's alone", allocs)
			}
		}
	}
}

// A Client asks for the group's path, the core group's under /api, on the given client's host.
func TestClientPaths(t *testing.T) {
	base, err := rest.RESTClientFor(&rest.Config{Host: "https://example.test:6443/prefix",
		ContentConfig: rest.ContentConfig{GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs}})
	if err != nil {
		t.Fatal(err)
	}
	for gv, want := range map[schema.GroupVersion]string{
		corev1.SchemeGroupVersion:                     "https://example.test:6443/prefix/api/v1/nodes",
		{Group: "coordination.k8s.io", Version: "v1"}: "https://example.test:6443/prefix/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
	} {
		rc, err := configMapCodecs(new([][]byte)).Client(base, gv)
		if err != nil {
			t.Fatal(err)
		}
		r := Resource{Client: rc, Name: "nodes"}
		if gv.Group != "" {
			r = Resource{Client: rc, Namespace: "kube-node-lease", Name: "leases"}
		}
		if got := r.request(&metav1.ListOptions{}).URL().String(); got != want {
			t.Errorf("%v: %s, want %s", gv, got, want)
		}
	}
}
