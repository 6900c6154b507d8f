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

// SizedMarshaler is what a generated Kubernetes type has to be encoded in place.
type SizedMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// Encode writes the body client-go's protobuf serializer writes for obj, the magic and a
// runtime.Unknown of apiVersion and kind around obj's bytes, in one buffer, and returns it with
// raw, obj's own bytes within it. runtime.Unknown's generated Marshal writes its typeMeta, raw,
// and an empty contentEncoding and contentType, in that order.
func Encode(apiVersion, kind string, obj SizedMarshaler) (body, raw []byte, err error) {
	n := obj.Size()
	typeMeta := protowire.SizeTag(TypeMetaAPIVersion) + protowire.SizeBytes(len(apiVersion)) +
		protowire.SizeTag(TypeMetaKind) + protowire.SizeBytes(len(kind))
	size := len(Magic) + protowire.SizeTag(UnknownTypeMeta) + protowire.SizeBytes(typeMeta) +
		protowire.SizeTag(UnknownRaw) + protowire.SizeBytes(n) +
		protowire.SizeTag(UnknownContentEncoding) + protowire.SizeBytes(0) +
		protowire.SizeTag(UnknownContentType) + protowire.SizeBytes(0)
	b := make([]byte, 0, size)
	b = append(b, Magic...)
	b = protowire.AppendVarint(protowire.AppendTag(b, UnknownTypeMeta, protowire.BytesType), uint64(typeMeta))
	b = protowire.AppendString(protowire.AppendTag(b, TypeMetaAPIVersion, protowire.BytesType), apiVersion)
	b = protowire.AppendString(protowire.AppendTag(b, TypeMetaKind, protowire.BytesType), kind)
	b = protowire.AppendVarint(protowire.AppendTag(b, UnknownRaw, protowire.BytesType), uint64(n))
	start := len(b)
	b = b[:start+n]
	if _, err := obj.MarshalToSizedBuffer(b[start:]); err != nil {
		return nil, nil, err
	}
	b = protowire.AppendString(protowire.AppendTag(b, UnknownContentEncoding, protowire.BytesType), "")
	b = protowire.AppendString(protowire.AppendTag(b, UnknownContentType, protowire.BytesType), "")
	return b, b[start : start+n : start+n], nil
}
