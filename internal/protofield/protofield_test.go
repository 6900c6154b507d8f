package protofield

import (
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

var errBad = errors.New("bad")

func TestEachSkipsWhatIsNotLengthDelimited(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "name")
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 300)
	b = protowire.AppendTag(b, 3, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 7)
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte{1, 2})
	var got []string
	if err := Each(b, func(num protowire.Number, v []byte) error {
		got = append(got, string(rune('0'+num))+":"+string(v))
		return nil
	}, errBad); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1:name", "4:\x01\x02"}; !reflect.DeepEqual(got, want) {
		t.Errorf("fields %q, want %q", got, want)
	}
}

func TestEachReturnsBadForBytesThatAreNoMessage(t *testing.T) {
	var cut []byte
	cut = protowire.AppendTag(cut, 1, protowire.BytesType)
	cut = protowire.AppendVarint(cut, 10) // ten bytes claimed, none there
	for name, b := range map[string][]byte{"cut field": cut, "cut tag": {0x80}, "cut varint": {0x10, 0x80}} {
		if err := Each(b, func(protowire.Number, []byte) error { return nil }, errBad); err != errBad {
			t.Errorf("%s: %v, want bad", name, err)
		}
	}
}

func TestEachStopsAtTheFunctionsError(t *testing.T) {
	var b []byte
	for range 3 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, "x")
	}
	calls, stop := 0, errors.New("stop")
	if err := Each(b, func(protowire.Number, []byte) error { calls++; return stop }, errBad); err != stop || calls != 1 {
		t.Errorf("Each returned %v after %d calls, want the function's error after 1", err, calls)
	}
}

func TestMapEntryReadsKeyAndValue(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, "true")
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "k8s.io/initial-events-end")
	k, v, err := MapEntry(b, errBad)
	if err != nil || string(k) != "k8s.io/initial-events-end" || string(v) != "true" {
		t.Errorf("MapEntry = %q, %q, %v; want the key and value", k, v, err)
	}
	if _, _, err := MapEntry([]byte{0x0a, 0x05}, errBad); err != errBad {
		t.Errorf("a cut entry: %v, want bad", err)
	}
}
