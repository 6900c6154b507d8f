package transport

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	protobufserializer "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"fakelet.dev/fakelet/agent"
)

// watchEvents are a streaming list's object, its initial-events-end bookmark, a change, and a 410
// ERROR event, as kube-apiserver sends them.
func watchEvents(t testing.TB) []metav1.WatchEvent {
	t.Helper()
	enc := protobufserializer.NewSerializer(scheme.Scheme, scheme.Scheme)
	object := func(o runtime.Object) []byte {
		b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(enc, corev1.SchemeGroupVersion), o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	status := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 5 (11)"}
	return []metav1.WatchEvent{
		{Type: "ADDED", Object: runtime.RawExtension{Raw: object(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "5",
			Annotations: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{NodeName: "fakelet-00001"}})}},
		{Type: "BOOKMARK", Object: runtime.RawExtension{Raw: object(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})}},
		{Type: "MODIFIED", Object: runtime.RawExtension{Raw: object(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "11"}})}},
		{Type: "ERROR", Object: runtime.RawExtension{Raw: object(status)}},
	}
}

// protobufStream frames events as a protobuf watch body: each a length, then the event.
func protobufStream(t testing.TB, events []metav1.WatchEvent) []byte {
	t.Helper()
	var out []byte
	for _, e := range events {
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// gzipMembers gzips each flush as a member of its own, as kube-apiserver compresses a streaming list.
func gzipMembers(t testing.TB, flushes ...[]byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, f := range flushes {
		zw := gzip.NewWriter(&out)
		if _, err := zw.Write(f); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// jsonStream is the same events as a JSON watch body.
func jsonStream(t testing.TB) []byte {
	t.Helper()
	events := []string{
		`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"5","annotations":{"a":"b}{\"["}},"spec":{"nodeName":"fakelet-00001","containers":[]}}}`,
		`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"11"}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (11)","reason":"Expired","code":410}}`,
	}
	var out []byte
	for _, e := range events {
		if !json.Valid([]byte(e)) {
			t.Fatalf("invalid test event %s", e)
		}
		out = append(append(out, e...), '\n')
	}
	return out
}

var wantEvents = []agent.WatchEvent{
	{Type: agent.EventAdded, ResourceVersion: "5"},
	{Type: agent.EventBookmark, ResourceVersion: "10", InitialEventsEnd: true},
	{Type: agent.EventModified, ResourceVersion: "11"},
}

type collected struct{ events []agent.WatchEvent }

func (c *collected) Opened(error)             {}
func (c *collected) Event(e agent.WatchEvent) { c.events = append(c.events, e) }
func (c *collected) Ended(error)              {}

// TestDecoderReadsEventsCutAnywhere feeds a watch body in two pieces cut at every byte, and in pieces
// of every size up to the whole: the same events and the same 410 at the end, whatever the cut.
func TestDecoderReadsEventsCutAnywhere(t *testing.T) {
	events := watchEvents(t)
	for _, format := range []struct {
		name       string
		json, gzip bool
		body       []byte
	}{
		{"protobuf", false, false, protobufStream(t, events)},
		{"json", true, false, jsonStream(t)},
		{"protobuf gzipped per flush", false, true, gzipMembers(t, protobufStream(t, events[:2]), protobufStream(t, events[2:3]), protobufStream(t, events[3:]))},
	} {
		t.Run(format.name, func(t *testing.T) {
			check := func(t *testing.T, pieces [][]byte) {
				t.Helper()
				c := &collected{}
				d := &eventDecoder{h: c, json: format.json, gzip: format.gzip}
				var err error
				for _, p := range pieces {
					if err = d.Write(p); err != nil {
						break
					}
				}
				d.End()
				if !apierrors.IsResourceExpired(err) || err.Error() != "too old resource version: 5 (11)" {
					t.Fatalf("ended with %v, want the 410", err)
				}
				if len(c.events) != len(wantEvents) {
					t.Fatalf("events %+v, want %+v", c.events, wantEvents)
				}
				for i := range wantEvents {
					if c.events[i] != wantEvents[i] {
						t.Fatalf("event %d: %+v, want %+v", i, c.events[i], wantEvents[i])
					}
				}
				if d.partial != nil || d.member != nil {
					t.Fatal("the decoder kept a buffer after the stream ended")
				}
			}
			b := format.body
			for cut := 0; cut <= len(b); cut++ {
				check(t, [][]byte{b[:cut], b[cut:]})
			}
			for size := 1; size <= len(b); size++ {
				var pieces [][]byte
				for i := 0; i < len(b); i += size {
					pieces = append(pieces, b[i:min(i+size, len(b))])
				}
				check(t, pieces)
			}
		})
	}
}

// TestDecoderEndsCutEvents: a body that ends inside an event is an unexpected EOF, one that ends
// between events is the server's timeout.
func TestDecoderEndsCutEvents(t *testing.T) {
	b := protobufStream(t, watchEvents(t)[:1])
	for _, cut := range []int{1, 4, 5, len(b) - 1} {
		d := &eventDecoder{h: &collected{}}
		if err := d.Write(b[:cut]); err != nil {
			t.Fatal(err)
		}
		if err := d.End(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d: %v, want unexpected EOF", cut, err)
		}
	}
	d := &eventDecoder{h: &collected{}}
	if err := d.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := d.End(); err != nil {
		t.Errorf("whole event: %v", err)
	}
}

// TestDecoderAllocatesNothingPerWholeEvent: an event that lies whole in a piece is decoded where it
// lies, and one cut across pieces reuses a pooled buffer.
func TestDecoderAllocatesNothingPerWholeEvent(t *testing.T) {
	bookmark := protobufStream(t, []metav1.WatchEvent{watchEvents(t)[1]})
	d := &eventDecoder{h: discard{}}
	whole := testing.AllocsPerRun(100, func() {
		if err := d.Write(bookmark); err != nil {
			t.Fatal(err)
		}
	})
	cut := testing.AllocsPerRun(100, func() {
		if err := d.Write(bookmark[:7]); err != nil {
			t.Fatal(err)
		}
		if err := d.Write(bookmark[7:]); err != nil {
			t.Fatal(err)
		}
	})
	// The resource version's string is the one allocation an event needs.
	if whole > 1 || cut > 1 {
		t.Errorf("allocations per event: %v whole, %v cut; want at most 1", whole, cut)
	}
}

type discard struct{}

func (discard) Opened(error)           {}
func (discard) Event(agent.WatchEvent) {}
func (discard) Ended(error)            {}

// The pod watch's events are decoded into pods, in protobuf and JSON, without their managed fields;
// bookmarks carry none.
func TestDecoderDecodesPods(t *testing.T) {
	for _, format := range []struct {
		name string
		json bool
		body []byte
	}{
		{"protobuf", false, protobufStream(t, watchEvents(t)[:3])},
		{"json", true, jsonStream(t)},
	} {
		c := &collected{}
		d := &eventDecoder{h: c, json: format.json, pods: true}
		if err := d.Write(format.body); err != nil && !format.json {
			t.Fatalf("%s: %v", format.name, err)
		}
		if len(c.events) < 3 {
			t.Fatalf("%s: %d events, want 3", format.name, len(c.events))
		}
		if p := c.events[0].Pod; p == nil || p.Name != "p" || p.Namespace != "ns" || p.Spec.NodeName != "fakelet-00001" || p.ManagedFields != nil {
			t.Errorf("%s: first event's pod %+v, want p in ns on fakelet-00001", format.name, p)
		}
		if c.events[1].Pod != nil {
			t.Errorf("%s: a bookmark with a pod", format.name)
		}
	}
}
