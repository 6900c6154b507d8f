package scrape

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// delimitedOf encodes a text exposition as the delimited protobuf one a component serves.
func delimitedOf(t testing.TB, text string) []byte {
	t.Helper()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func TestDelimitedKeepsWhatTheDecoderKeeps(t *testing.T) {
	text, err := os.ReadFile("testdata/apiserver.prom")
	if err != nil {
		t.Fatal(err)
	}
	b := delimitedOf(t, string(text))
	got, err := Parse(bytes.NewReader(b), expfmt.NewFormat(expfmt.TypeProtoDelim), Selection)
	if err != nil {
		t.Fatal(err)
	}
	want := parser{sel: Selection, out: map[string]*Family{}, bounds: map[string][]float64{}}
	if err := want.decoded(expfmt.NewDecoder(bytes.NewReader(b), expfmt.NewFormat(expfmt.TypeProtoDelim))); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || !reflect.DeepEqual(got, want.out) {
		t.Errorf("skipping parse kept %v\nwant what expfmt's decoder keeps, %v", got, want.out)
	}
	if _, ok := got["go_goroutines"]; ok {
		t.Error("kept go_goroutines, which is not selected")
	}
}

func TestDelimitedFindsANameThatIsNotFirst(t *testing.T) {
	// A family whose type is marshalled before its name, which no client does but the format allows.
	typ := protoField(3, []byte{byte(dto.MetricType_COUNTER)})
	mf := &dto.MetricFamily{Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(7)}}}}
	rest, err := proto.Marshal(mf)
	if err != nil {
		t.Fatal(err)
	}
	msg := append(append(typ, protoBytes(1, "process_cpu_seconds_total")...), rest...)
	fams, err := Parse(bytes.NewReader(delimit(msg)), expfmt.NewFormat(expfmt.TypeProtoDelim), Selection)
	if err != nil {
		t.Fatal(err)
	}
	if f := fams["process_cpu_seconds_total"]; f == nil || f.Series[""].Value != 7 {
		t.Errorf("process_cpu_seconds_total = %+v, want 7", f)
	}
}

func TestDelimitedRefusesABrokenExposition(t *testing.T) {
	good := delimitedOf(t, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3\n")
	huge := binary.AppendUvarint(nil, maxFamily+1)
	for name, b := range map[string][]byte{
		"cut short":        good[:len(good)-2],
		"length only":      binary.AppendUvarint(nil, 40),
		"above the bound":  huge,
		"undecodable body": delimit([]byte{0x0a, 0x7f}), // a name claiming 127 bytes of 0
	} {
		if _, err := Parse(bytes.NewReader(b), expfmt.NewFormat(expfmt.TypeProtoDelim), Selection); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func delimit(msg []byte) []byte { return append(binary.AppendUvarint(nil, uint64(len(msg))), msg...) }

func protoField(num byte, varint []byte) []byte { return append([]byte{num<<3 | 0}, varint...) }

func protoBytes(num byte, s string) []byte {
	return append(append([]byte{num<<3 | 2}, binary.AppendUvarint(nil, uint64(len(s)))...), s...)
}

// apiserverLike is an exposition shaped like kube-apiserver's: the families of testdata beside
// many it exposes and no report reads, histograms by resource and verb.
func apiserverLike(b *testing.B) []byte {
	text, err := os.ReadFile("testdata/apiserver.prom")
	if err != nil {
		b.Fatal(err)
	}
	var s strings.Builder
	s.Write(text)
	for f := range 60 {
		fmt.Fprintf(&s, "# TYPE unread_family_%d_seconds histogram\n", f)
		for r := range 40 {
			for _, verb := range []string{"GET", "LIST", "WATCH", "PUT", "PATCH", "POST"} {
				l := fmt.Sprintf(`resource="resource%d",verb="%s"`, r, verb)
				for i, le := range []string{"0.005", "0.025", "0.1", "0.25", "1", "5", "+Inf"} {
					fmt.Fprintf(&s, "unread_family_%d_seconds_bucket{%s,le=\"%s\"} %d\n", f, l, le, i*10)
				}
				fmt.Fprintf(&s, "unread_family_%d_seconds_sum{%s} 1.5\nunread_family_%d_seconds_count{%s} 60\n", f, l, f, l)
			}
		}
	}
	return delimitedOf(b, s.String())
}

// BenchmarkParseApiserverLike is a scrape's parse of an apiserver-sized exposition: decoded whole
// by expfmt, as before, and with the unread families skipped undecoded.
func BenchmarkParseApiserverLike(b *testing.B) {
	exp := apiserverLike(b)
	b.Run("decoded whole", func(b *testing.B) {
		b.SetBytes(int64(len(exp)))
		b.ReportAllocs()
		for b.Loop() {
			p := parser{sel: Selection, out: map[string]*Family{}, bounds: map[string][]float64{}}
			if err := p.decoded(expfmt.NewDecoder(bytes.NewReader(exp), expfmt.NewFormat(expfmt.TypeProtoDelim))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unread skipped", func(b *testing.B) {
		b.SetBytes(int64(len(exp)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(bytes.NewReader(exp), expfmt.NewFormat(expfmt.TypeProtoDelim), Selection); err != nil {
				b.Fatal(err)
			}
		}
	})
}
