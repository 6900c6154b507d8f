package standin

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"fakelet.dev/fakelet/internal/protofield"
)

// TestEncodeIsTheEnvelopeOfMarshal: an entry's one buffer holds the bytes the envelope of its
// object's Marshal has, and its raw is that Marshal, whatever the sizes of its varints.
func TestEncodeIsTheEnvelopeOfMarshal(t *testing.T) {
	lease := testLease("n1")
	lease.Annotations = map[string]string{"long": strings.Repeat("x", 300)}
	objects := map[string]struct {
		apiVersion, kind string
		obj              runtime.Object
	}{
		"a lease":            {"coordination.k8s.io/v1", "Lease", testLease("n1")},
		"a lease over 256 B": {"coordination.k8s.io/v1", "Lease", lease},
		"an empty node":      {"v1", "Node", &corev1.Node{}},
		"a node of 20 KB":    {"v1", "Node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{"a": strings.Repeat("y", 20000)}}}},
		"a long kind":        {strings.Repeat("g", 130) + "/v1", strings.Repeat("K", 200), testLease("n1")},
	}
	for name, o := range objects {
		raw, err := o.obj.(marshaler).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		pb, gotRaw, err := protofield.Encode(o.apiVersion, o.kind, o.obj.(protofield.SizedMarshaler))
		if err != nil {
			t.Fatal(err)
		}
		if want := envelope(o.apiVersion, o.kind, raw); !bytes.Equal(pb, want) || !bytes.Equal(gotRaw, raw) {
			t.Errorf("%s: encoded\n%q with raw %q\nwant\n%q with raw %q", name, pb, gotRaw, want, raw)
		}
		if len(pb) != cap(pb) || len(gotRaw) != cap(gotRaw) {
			t.Errorf("%s: the body's capacity %d for %d bytes, raw's %d for %d: an append to either would write into what is shared", name, cap(pb), len(pb), cap(gotRaw), len(gotRaw))
		}
	}
}
