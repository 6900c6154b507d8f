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
// them, and a repeated field's last value wins. It is stricter than Unmarshal only in what no
// Kubernetes encoder writes: an overlong varint, a group whose end names another field.
func Envelope(b []byte) (apiVersion, kind, raw []byte, ok bool) {
	rest, found := bytes.CutPrefix(b, Magic)
	if !found {
		return nil, nil, nil, false
	}
	err := each(rest, UnknownContentType, func(num protowire.Number, v []byte) error {
		switch num {
		case UnknownTypeMeta:
			return each(v, TypeMetaKind, func(num protowire.Number, v []byte) error {
				switch num {
				case TypeMetaAPIVersion:
					apiVersion = v
				case TypeMetaKind:
					kind = v
				}
				return nil
			}, errNotUnknown)
		case UnknownRaw:
			raw = v
		}
		return nil
	}, errNotUnknown)
	if err != nil {
		return nil, nil, nil, false
	}
	return apiVersion, kind, raw, true
}
