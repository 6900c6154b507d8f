package transport

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	protobufserializer "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// allocated is how many bytes f allocates on this goroutine's heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecoderAllocatesWhatArrivesNotWhatIsClaimed: a protobuf event's length is the server's word;
// the decoder's buffer grows with the bytes that come, so ten bytes of a claimed 15 MiB event cost
// kilobytes, not 15 MiB, and a stream of such claims cannot hold 15 MiB per stream.
func TestDecoderAllocatesWhatArrivesNotWhatIsClaimed(t *testing.T) {
	claim := binary.BigEndian.AppendUint32(nil, 15<<20)
	piece := append(claim, make([]byte, 10)...)
	d := &eventDecoder{h: &collected{}}
	n := allocated(func() {
		if err := d.Write(piece); err != nil {
			t.Fatal(err)
		}
	})
	d.End()
	if n > 1<<20 {
		t.Errorf("10 bytes of an event that claims 15 MiB allocated %d bytes", n)
	}
}

// TestDecoderRefusesEventsPastClientGosLimit: client-go's streaming decoder takes no object above
// 16 MiB (k8s.io/apimachinery/pkg/runtime/serializer/streaming), so neither does a fake kubelet's
// watch: the error names the limit.
func TestDecoderRefusesEventsPastClientGosLimit(t *testing.T) {
	for _, format := range []struct {
		name string
		json bool
		body []byte
	}{
		{"protobuf", false, binary.BigEndian.AppendUint32(nil, 16<<20+1)},
		{"json", true, []byte(`{"type":"ADDED","object":{"metadata":{"name":"` + strings.Repeat("x", 16<<20) + `"}}}`)},
	} {
		t.Run(format.name, func(t *testing.T) {
			d := &eventDecoder{h: &collected{}, json: format.json}
			var err error
			for b := format.body; len(b) > 0 && err == nil; {
				n := min(len(b), 16<<10)
				err, b = d.Write(b[:n]), b[n:]
			}
			d.End()
			if err == nil || !strings.Contains(err.Error(), strconv.Itoa(16<<20)) {
				t.Fatalf("got %v, want the event refused, naming the limit of %d bytes", err, 16<<20)
			}
		})
	}
}

// largeGzippedList is a streaming list's gzip member of events of about 4 MiB in all, whose pods
// carry annotations that compress as a real object's fields do, about four to one.
func largeGzippedList(t testing.TB) (member []byte, events int) {
	t.Helper()
	enc := protobufserializer.NewSerializer(scheme.Scheme, scheme.Scheme)
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"kubernetes.io", "fakelet", "node", "pod", "container", "image", "registry", "sha256", "volume", "status"}
	var list []metav1.WatchEvent
	size := 0
	for i := 0; size < 4<<20; i++ {
		ann := map[string]string{}
		for k := range 40 {
			var v strings.Builder
			for range 30 {
				v.WriteString(words[rng.IntN(len(words))])
				v.WriteString(strconv.Itoa(rng.IntN(1000)))
			}
			ann["a"+strconv.Itoa(k)] = v.String()
		}
		raw, err := k8sruntime.Encode(scheme.Codecs.EncoderForVersion(enc, corev1.SchemeGroupVersion),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + strconv.Itoa(i), ResourceVersion: strconv.Itoa(i + 1), Annotations: ann}})
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, metav1.WatchEvent{Type: "ADDED", Object: k8sruntime.RawExtension{Raw: raw}})
		size += len(raw)
	}
	return gzipMembers(t, protobufStream(t, list)), len(list)
}

// TestGzipMemberCutInManyPiecesIsInflatedOnce: a member that arrives over many DATA frames is
// inflated as they come, not again from its start at each (the square of its pieces: this member
// of 4 MiB of events took 11 s so in 1 KiB pieces, and passes the bound below in 512-byte ones).
// Inflated once, it takes milliseconds.
func TestGzipMemberCutInManyPiecesIsInflatedOnce(t *testing.T) {
	member, events := largeGzippedList(t)
	c := &collected{}
	d := &eventDecoder{h: c, gzip: true}
	start := time.Now()
	for b := member; len(b) > 0; {
		n := min(len(b), 512)
		if err := d.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%d of %d compressed bytes inflated in %v", len(member)-len(b), len(member), time.Since(start))
		}
	}
	if err := d.End(); err != nil {
		t.Fatal(err)
	}
	if len(c.events) != events {
		t.Fatalf("%d events, want %d", len(c.events), events)
	}
	t.Logf("%d compressed bytes, %d events, in %v", len(member), events, time.Since(start))
}

// TestDecoderEndsCutGzipMember: a body that ends inside a gzip member cut across pieces is an
// unexpected EOF, and the member's inflater is gone with it (goleak, in TestMain, holds its
// goroutine to that).
func TestDecoderEndsCutGzipMember(t *testing.T) {
	member, _ := largeGzippedList(t)
	d := &eventDecoder{h: &collected{}, gzip: true}
	for b := member[:len(member)/2]; len(b) > 0; {
		n := min(len(b), 16<<10)
		if err := d.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	if d.member == nil {
		t.Fatal("half a member cut in pieces has no inflater")
	}
	if err := d.End(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("ended with %v, want unexpected EOF", err)
	}
	if d.member != nil {
		t.Error("the member's inflater outlived the body")
	}
}
