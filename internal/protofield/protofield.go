// Package protofield reads protobuf messages field by field, for decoders that take a few fields
// of a Kubernetes object off its bytes instead of unmarshalling it whole: the agents' watch events
// and renewal answers (transport), the lean watches (internal/leancodec), the measurement's Leases
// (measure/observe); and every body's envelope, which the stand-in reads too.
package protofield

import "google.golang.org/protobuf/encoding/protowire"

// Each calls f with each length-delimited field of the message b, skipping the others, and stops
// at f's first error. Bytes that are no message make it return bad.
func Each(b []byte, f func(protowire.Number, []byte) error, bad error) error {
	return each(b, 0, f, bad)
}

// each is Each for a message whose fields 1 to strict are all length-delimited: one of them of
// another wire type makes it return bad, as the message's generated Unmarshal fails.
func each(b []byte, strict protowire.Number, f func(protowire.Number, []byte) error, bad error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return bad
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if num <= strict {
				return bad
			}
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return bad
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return bad
		}
		b = b[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}

// The fields of a protobuf map's entry.
const (
	mapKey   = 1
	mapValue = 2
)

// MapEntry reads the key and value of one entry of a map field (a Kubernetes object's labels or
// annotations), as Each reads a message.
func MapEntry(b []byte, bad error) (key, value []byte, err error) {
	err = Each(b, func(num protowire.Number, v []byte) error {
		switch num {
		case mapKey:
			key = v
		case mapValue:
			value = v
		}
		return nil
	}, bad)
	return key, value, err
}
