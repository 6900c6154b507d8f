package standin

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestEventsAreFramedAsWatchEventsMarshal: an event's frame is the length-prefixed
// metav1.WatchEvent its generated Marshal makes, or the JSON line, whatever its object's size.
func TestEventsAreFramedAsWatchEventsMarshal(t *testing.T) {
	leases := resourceNamed(t, "leases")
	for _, size := range []int{0, 100, 200, 20000, 3 << 20} {
		l := testLease("n1")
		l.Annotations = map[string]string{"a": strings.Repeat("x", size)}
		e, err := newEntry(leases, l, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{added, modified, deleted, bookmark} {
			ev := event{typ: typ, e: e}
			we := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: e.pb}}
			want := make([]byte, 4+we.Size())
			binary.BigEndian.PutUint32(want, uint32(we.Size()))
			if _, err := we.MarshalToSizedBuffer(want[4:]); err != nil {
				t.Fatal(err)
			}
			var w bytes.Buffer
			if err := writeEvent(&w, ev, false); err != nil || !bytes.Equal(w.Bytes(), want) {
				t.Errorf("%s of a %d-byte Lease: framed %d bytes (%v), want %d", typ, len(e.pb), w.Len(), err, len(want))
			}
			w.Reset()
			wantJSON := `{"type":"` + typ + `","object":` + string(e.body(true)) + "}\n"
			if err := writeEvent(&w, ev, true); err != nil || w.String() != wantJSON {
				t.Errorf("%s of a %d-byte Lease in JSON: %.200q (%v), want %.200q", typ, len(e.pb), w.String(), err, wantJSON)
			}
		}
	}
}
