package protofield

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
)

// envelopeCases are bodies Envelope must read as runtime.Unknown's Unmarshal does: the seeds of
// FuzzEnvelope, and TestEnvelopeReadsAsUnknownUnmarshals' cases.
func envelopeCases(t testing.TB) map[string][]byte {
	body := func(u runtime.Unknown) []byte {
		b, err := u.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return append(bytes.Clone(Magic), b...)
	}
	tm := runtime.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
	valid := body(runtime.Unknown{TypeMeta: tm, Raw: []byte{0x0a, 0x02, 'n', '1'}})
	typeMeta := func(f []byte) []byte {
		return append(bytes.Clone(Magic), protowire.AppendBytes(protowire.AppendTag(nil, UnknownTypeMeta, protowire.BytesType), f)...)
	}
	return map[string][]byte{
		"a lease":                   valid,
		"with a content type":       body(runtime.Unknown{TypeMeta: tm, Raw: []byte{1}, ContentType: "application/vnd.kubernetes.protobuf", ContentEncoding: "x"}),
		"no raw":                    body(runtime.Unknown{TypeMeta: tm}),
		"no type":                   body(runtime.Unknown{Raw: []byte{1}}),
		"the magic alone":           Magic,
		"no magic":                  valid[len(Magic):],
		"empty":                     nil,
		"truncated":                 valid[:len(valid)-5],
		"an unknown field":          protowire.AppendBytes(protowire.AppendTag(bytes.Clone(valid), 9, protowire.BytesType), []byte("x")),
		"an unknown varint":         protowire.AppendVarint(protowire.AppendTag(bytes.Clone(valid), 9, protowire.VarintType), 1),
		"a varint where raw is":     protowire.AppendVarint(protowire.AppendTag(bytes.Clone(valid), UnknownRaw, protowire.VarintType), 1),
		"raw twice":                 protowire.AppendBytes(protowire.AppendTag(bytes.Clone(valid), UnknownRaw, protowire.BytesType), []byte{2}),
		"a typeMeta with a varint":  typeMeta(protowire.AppendVarint(protowire.AppendTag(nil, TypeMetaAPIVersion, protowire.VarintType), 3)),
		"a typeMeta with a field 3": typeMeta(protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), []byte("x"))),
		"a typeMeta cut short":      typeMeta([]byte{0x0a, 0x05, 'v'}),
		"field zero":                append(bytes.Clone(Magic), 0x02, 0x00),
	}
}

// TestEnvelopeReadsAsUnknownUnmarshals: Envelope takes what runtime.Unknown's Unmarshal takes, and
// reads the same type and object bytes. FuzzEnvelope checks the half that matters on any bytes:
// what Envelope takes, Unmarshal takes and reads alike.
func TestEnvelopeReadsAsUnknownUnmarshals(t *testing.T) {
	for name, b := range envelopeCases(t) {
		t.Run(name, func(t *testing.T) {
			_, err := unmarshal(b)
			if _, _, _, ok := Envelope(b); ok != (err == nil) {
				t.Fatalf("Envelope(%x): ok %v, Unmarshal: %v", b, ok, err)
			}
			compareWithUnmarshal(t, b)
		})
	}
}

func FuzzEnvelope(f *testing.F) {
	for _, b := range envelopeCases(f) {
		f.Add(b)
	}
	f.Fuzz(compareWithUnmarshal)
}

// compareWithUnmarshal fails if Envelope takes b and Unmarshal does not, or reads it otherwise.
func compareWithUnmarshal(t *testing.T, b []byte) {
	apiVersion, kind, raw, ok := Envelope(b)
	if !ok {
		return
	}
	u, err := unmarshal(b)
	if err != nil {
		t.Fatalf("Envelope(%x) takes what Unmarshal refuses: %v", b, err)
	}
	if string(apiVersion) != u.APIVersion || string(kind) != u.Kind || !bytes.Equal(raw, u.Raw) {
		t.Fatalf("Envelope(%x): %q %q %x, Unmarshal reads %q %q %x", b, apiVersion, kind, raw, u.APIVersion, u.Kind, u.Raw)
	}
}

// unmarshal is what client-go's protobuf serializer makes of a body's envelope.
func unmarshal(b []byte) (runtime.Unknown, error) {
	var u runtime.Unknown
	rest, ok := bytes.CutPrefix(b, Magic)
	if !ok {
		return u, errNotUnknown
	}
	return u, u.Unmarshal(rest)
}

// TestEncodeWritesWhatTheSerializerWrites: Encode's body is the magic and runtime.Unknown's own
// Marshal of the object's bytes, and Envelope reads it back, without allocating.
func TestEncodeWritesWhatTheSerializerWrites(t *testing.T) {
	obj := &runtime.Unknown{Raw: []byte("an object's bytes"), ContentType: "x"}
	body, raw, err := Encode("coordination.k8s.io/v1", "Lease", obj)
	if err != nil {
		t.Fatal(err)
	}
	objRaw, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}, Raw: objRaw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, append(bytes.Clone(Magic), want...)) || !bytes.Equal(raw, objRaw) || cap(body) != len(body) {
		t.Fatalf("Encode: %x (cap %d), raw %x; want %x%x, raw %x", body, cap(body), raw, Magic, want, objRaw)
	}
	if a := testing.AllocsPerRun(100, func() { _, _, _, _ = Envelope(body) }); a != 0 {
		t.Errorf("Envelope allocates %v times", a)
	}
}
