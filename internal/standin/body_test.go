package standin

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"fakelet.dev/fakelet/internal/protofield"
)

// TestBodiesDecodeAsTheDeserializerDecodesThem: a body decodes to what the universal deserializer
// makes of it, or fails as it fails, whether or not it takes the protobuf shortcut.
func TestBodiesDecodeAsTheDeserializerDecodesThem(t *testing.T) {
	leases := resourceNamed(t, "leases")
	lease := testLease("n1")
	lease.Labels = map[string]string{"a": "b"}
	raw, err := lease.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	unknown := func(u runtime.Unknown) []byte {
		b, err := u.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return append(append([]byte{}, protofield.Magic...), b...)
	}
	tm := runtime.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
	valid := unknown(runtime.Unknown{TypeMeta: tm, Raw: raw})
	bodies := map[string][]byte{
		"a lease":                        valid,
		"a lease with a content type":    unknown(runtime.Unknown{TypeMeta: tm, Raw: raw, ContentType: "application/vnd.kubernetes.protobuf", ContentEncoding: "x"}),
		"a lease with no raw":            unknown(runtime.Unknown{TypeMeta: tm}),
		"a node":                         unknown(runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Node"}}),
		"another version":                unknown(runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "coordination.k8s.io/v1beta1", Kind: "Lease"}, Raw: raw}),
		"no kind":                        unknown(runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "coordination.k8s.io/v1"}, Raw: raw}),
		"raw that is not a lease":        unknown(runtime.Unknown{TypeMeta: tm, Raw: []byte{0xff, 0xff}}),
		"truncated":                      valid[:len(valid)-5],
		"the magic alone":                protofield.Magic,
		"empty":                          nil,
		"an unknown field":               protowire.AppendBytes(protowire.AppendTag(bytes.Clone(valid), 9, protowire.BytesType), []byte("x")),
		"a varint where bytes are":       protowire.AppendVarint(protowire.AppendTag(bytes.Clone(valid), 2, protowire.VarintType), 1),
		"a typeMeta with a varint":       append(bytes.Clone(protofield.Magic), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 3))...),
		"json":                           []byte(`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"n1"}}`),
		"json of another kind":           []byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`),
		"not json":                       []byte(`nope`),
		"the raw lease without envelope": raw,
	}
	for name, body := range bodies {
		want, wantErr := deserialize(body, leases)
		for _, cl := range []int64{int64(len(body)), -1} {
			req := httptest.NewRequest(http.MethodPut, "/", bytes.NewReader(body))
			req.ContentLength = cl
			got, err := decodeBody(req, leases)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s (content length %d): decoded %#v, %v; the deserializer decodes %#v, %v", name, cl, got, err, want, wantErr)
			}
		}
	}
}

// deserialize is decodeBody without its shortcut.
func deserialize(body []byte, r *resource) (runtime.Object, error) {
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if *gvk != r.gvk() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, not a %s", gvk, r.gvk()))
	}
	return obj, nil
}

// TestReadBodyReadsWhatReadAllReads: a body longer, shorter or other than its declared length, or
// over the limit, is read as io.ReadAll(io.LimitReader(body, limit)) reads it.
func TestReadBodyReadsWhatReadAllReads(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 300)
	for _, n := range []int{0, 1, 511, 512, 513, 3000} {
		for _, cl := range []int64{int64(n), -1, 0, 10, int64(n) + 100} {
			for _, limit := range []int64{1, 512, 1000, 5000} {
				req := httptest.NewRequest(http.MethodPut, "/", bytes.NewReader(body[:n]))
				req.ContentLength = cl
				got, err := readBody(req, limit)
				want := body[:min(int64(n), limit)]
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%d bytes declared as %d, limit %d: read %d bytes, %v; want %d", n, cl, limit, len(got), err, len(want))
				}
			}
		}
	}
}

func resourceNamed(t *testing.T, plural string) *resource {
	t.Helper()
	for _, r := range resources {
		if r.gvr.Resource == plural {
			return r
		}
	}
	t.Fatalf("no resource %s", plural)
	return nil
}
