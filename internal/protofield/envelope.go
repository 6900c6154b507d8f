package protofield

import (
	"bytes"
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// Magic starts every Kubernetes protobuf body, before the runtime.Unknown that wraps the object.
var Magic = []byte{0x6b, 0x38, 0x73, 0x00}

// The fields of runtime.Unknown and of its runtime.TypeMeta, from k8s.io/apimachinery's
// generated.proto: every one of them is length-delimited.
const (
	UnknownTypeMeta        = 1
	UnknownRaw             = 2 // the object itself
	UnknownContentEncoding = 3
	UnknownContentType     = 4
	TypeMetaAPIVersion     = 1
	TypeMetaKind           = 2
)

var errNotUnknown = errors.New("not a runtime.Unknown")

// Envelope reads a Kubernetes protobuf body in place: the magic, then a runtime.Unknown, whose
// type and object bytes it returns. ok is false where the magic is missing or where
// runtime.Unknown's generated Unmarshal fails: bytes that are no message, or one of its fields,
// or its TypeMeta's, of another wire type. Fields it does not know are skipped, as Unmarshal skips
// them, and a repeated field's last value wins. It is stricter than Unmarshal only where no
// Kubernetes encoder writes: an overlong varint, a group whose end names another field. Callers
// leave what it refuses to the scheme's decoders, whose answer is the reference.
func Envelope(b []byte) (apiVersion, kind, raw []byte, ok bool) {
	rest, found := bytes.CutPrefix(b, Magic)
	if !found {
		return nil, nil, nil, false
	}
	err := eachKnown(rest, UnknownContentType, func(num protowire.Number, v []byte) error {
		switch num {
		case UnknownTypeMeta:
			return eachKnown(v, TypeMetaKind, func(num protowire.Number, v []byte) error {
				if num == TypeMetaAPIVersion {
					apiVersion = v
				} else {
					kind = v
				}
				return nil
			})
		case UnknownRaw:
			raw = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, false
	}
	return apiVersion, kind, raw, true
}

// eachKnown calls f with each of the fields 1 to last of the message b, which must be
// length-delimited, and skips the others, as the generated Unmarshal of a message whose fields are
// all bytes does.
func eachKnown(b []byte, last protowire.Number, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errNotUnknown
		}
		b = b[n:]
		if num > last {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return errNotUnknown
			}
			b = b[n:]
			continue
		}
		if typ != protowire.BytesType {
			return errNotUnknown
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return errNotUnknown
		}
		b = b[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}
