package transport

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// answerLease is the Lease a renewal's answer decodes into: what Lease.Unmarshal would decode, with
// every field the answer spells as the renewal did taken from the Lease sent rather than decoded
// again. The server returns what it was sent but for the resourceVersion and the managed fields'
// time, so a renewal's answer costs a few allocations instead of some twenty, and the fleet's Leases
// share their strings with the ones sent before them.
type answerLease struct {
	out     *coordinationv1.Lease
	sent    *coordinationv1.Lease
	sentRaw []byte // sent's bytes, as encodeLease wrote them
}

func (a answerLease) object() runtime.Object   { return a.out }
func (answerLease) typeMeta() runtime.TypeMeta { return leaseTypeMeta }

// Unmarshal decodes raw into a.out. Whatever it does not expect (a field it does not know, one
// repeated that is not, bytes that are no message) it leaves to Lease.Unmarshal, whose result and
// errors are the reference (FuzzAnswerLease).
func (a answerLease) Unmarshal(raw []byte) error {
	*a.out = coordinationv1.Lease{}
	if a.sent == nil || !a.decode(raw) {
		*a.out = coordinationv1.Lease{}
		return a.out.Unmarshal(raw)
	}
	return nil
}

func (a answerLease) decode(raw []byte) bool {
	var af, sf [4]field
	got, ok1 := fieldsOf(raw, af[:0])
	sent, ok2 := fieldsOf(a.sentRaw, sf[:0])
	if !ok1 || !ok2 {
		return false
	}
	for i, f := range got {
		if repeats(got, i) {
			return false
		}
		s, found := only(sent, f.num)
		switch f.num {
		case objectMetadata:
			if found && bytes.Equal(f.val, s.val) {
				a.out.ObjectMeta = a.sent.ObjectMeta
			} else if !decodeMeta(f.val, s.val, found, &a.sent.ObjectMeta, &a.out.ObjectMeta) {
				return false
			}
		case leaseSpec:
			if !decodeSpec(f.val, s.val, found, &a.sent.Spec, &a.out.Spec) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// decodeSpec decodes a LeaseSpec field by field, taking from sent each field but the times whose
// bytes are sent's (s, its bytes if found): a time sent is the clock's, finer than its encoding.
func decodeSpec(b, s []byte, found bool, sent, out *coordinationv1.LeaseSpec) bool {
	var gf, sf [8]field
	got, ok := fieldsOf(b, gf[:0])
	if !ok {
		return false
	}
	var prev []field
	if found {
		if prev, ok = fieldsOf(s, sf[:0]); !ok {
			return false
		}
	}
	for i, f := range got {
		if repeats(got, i) {
			return false
		}
		p, same := only(prev, f.num)
		same = same && p.typ == f.typ && bytes.Equal(f.val, p.val)
		switch {
		case f.num == specAcquireTime || f.num == specRenewTime:
			if f.typ != protowire.BytesType {
				return false
			}
			t := new(metav1.MicroTime)
			if t.Unmarshal(f.val) != nil {
				return false
			}
			if f.num == specAcquireTime {
				out.AcquireTime = t
			} else {
				out.RenewTime = t
			}
		case same && (f.num == specHolderIdentity || f.num == specLeaseDurationSeconds || f.num == specLeaseTransitions ||
			f.num == specStrategy || f.num == specPreferredHolder):
			switch f.num {
			case specHolderIdentity:
				out.HolderIdentity = sent.HolderIdentity
			case specLeaseDurationSeconds:
				out.LeaseDurationSeconds = sent.LeaseDurationSeconds
			case specLeaseTransitions:
				out.LeaseTransitions = sent.LeaseTransitions
			case specStrategy:
				out.Strategy = sent.Strategy
			default:
				out.PreferredHolder = sent.PreferredHolder
			}
		default:
			return false // a change the renewal did not send: left to Unmarshal
		}
	}
	return true
}

// decodeMeta decodes an ObjectMeta field by field, taking from sent each field whose bytes are
// sent's (s, its bytes if found).
func decodeMeta(b, s []byte, found bool, sent, out *metav1.ObjectMeta) bool {
	var gf, sf [24]field
	got, ok := fieldsOf(b, gf[:0])
	if !ok {
		return false
	}
	var prev []field
	if found {
		if prev, ok = fieldsOf(s, sf[:0]); !ok {
			return false
		}
	}
	for i, f := range got {
		switch f.num {
		case metaName, metaGenerateName, metaNamespace, metaSelfLink, metaUID, metaRV:
			if repeats(got, i) || f.typ != protowire.BytesType {
				return false
			}
			p, same := only(prev, f.num)
			same = same && bytes.Equal(f.val, p.val)
			*metaString(out, f.num) = sentOr(same, *metaString(sent, f.num), f.val)
		case metaGeneration:
			v, n := protowire.ConsumeVarint(f.val)
			if repeats(got, i) || f.typ != protowire.VarintType || n != len(f.val) {
				return false
			}
			out.Generation = int64(v)
		case metaCreationTimestamp:
			if repeats(got, i) || f.typ != protowire.BytesType {
				return false
			}
			if p, same := only(prev, f.num); same && bytes.Equal(f.val, p.val) {
				out.CreationTimestamp = sent.CreationTimestamp
			} else if out.CreationTimestamp.Unmarshal(f.val) != nil {
				return false
			}
		case metaLabels, metaAnnotations, metaOwnerReferences, metaFinalizers:
			if first(got, i) && !sameAll(got, prev, f.num) {
				return false // a change the renewal did not send: left to Unmarshal
			}
			switch f.num {
			case metaLabels:
				out.Labels = sent.Labels
			case metaAnnotations:
				out.Annotations = sent.Annotations
			case metaOwnerReferences:
				out.OwnerReferences = sent.OwnerReferences
			case metaFinalizers:
				out.Finalizers = sent.Finalizers
			}
		case metaManagedFields:
			if !first(got, i) {
				continue
			}
			if !decodeManagedFields(got, prev, sent.ManagedFields, &out.ManagedFields) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// decodeManagedFields decodes the managed fields' entries of got, each entry whose bytes are the
// sent entry's at its place taken from sent, the others field by field.
func decodeManagedFields(got, prev []field, sent []metav1.ManagedFieldsEntry, out *[]metav1.ManagedFieldsEntry) bool {
	if sameAll(got, prev, metaManagedFields) {
		*out = sent
		return true
	}
	var entries, sentEntries []field
	for _, f := range got {
		if f.num == metaManagedFields {
			entries = append(entries, f)
		}
	}
	for _, f := range prev {
		if f.num == metaManagedFields {
			sentEntries = append(sentEntries, f)
		}
	}
	if len(sentEntries) != len(sent) {
		return false
	}
	*out = make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		if e.typ != protowire.BytesType {
			return false
		}
		switch {
		case i < len(sentEntries) && bytes.Equal(e.val, sentEntries[i].val):
			(*out)[i] = sent[i]
		case i < len(sentEntries):
			if !decodeEntry(e.val, sentEntries[i].val, &sent[i], &(*out)[i]) {
				return false
			}
		default:
			if (*out)[i].Unmarshal(e.val) != nil {
				return false
			}
		}
	}
	return true
}

// decodeEntry decodes a managed fields' entry field by field, taking from sent each field whose
// bytes are sent's (s).
func decodeEntry(b, s []byte, sent, out *metav1.ManagedFieldsEntry) bool {
	var gf, sf [8]field
	got, ok1 := fieldsOf(b, gf[:0])
	prev, ok2 := fieldsOf(s, sf[:0])
	if !ok1 || !ok2 {
		return false
	}
	for i, f := range got {
		if repeats(got, i) || f.typ != protowire.BytesType {
			return false
		}
		p, same := only(prev, f.num)
		same = same && bytes.Equal(f.val, p.val)
		switch f.num {
		case entryManager:
			out.Manager = sentOr(same, sent.Manager, f.val)
		case entryOperation:
			out.Operation = metav1.ManagedFieldsOperationType(sentOr(same, string(sent.Operation), f.val))
		case entryAPIVersion:
			out.APIVersion = sentOr(same, sent.APIVersion, f.val)
		case entryFieldsType:
			out.FieldsType = sentOr(same, sent.FieldsType, f.val)
		case entrySubresource:
			out.Subresource = sentOr(same, sent.Subresource, f.val)
		case entryTime:
			if same {
				out.Time = sent.Time
			} else if out.Time = new(metav1.Time); out.Time.Unmarshal(f.val) != nil {
				return false
			}
		case entryFieldsV1:
			if same {
				out.FieldsV1 = sent.FieldsV1
			} else if out.FieldsV1 = new(metav1.FieldsV1); out.FieldsV1.Unmarshal(f.val) != nil {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func metaString(m *metav1.ObjectMeta, num protowire.Number) *string {
	switch num {
	case metaName:
		return &m.Name
	case metaGenerateName:
		return &m.GenerateName
	case metaNamespace:
		return &m.Namespace
	case metaSelfLink:
		return &m.SelfLink
	case metaUID:
		return (*string)(&m.UID)
	default:
		return &m.ResourceVersion
	}
}

// sentOr is sent's value when same, else v's bytes as a string of their own.
func sentOr(same bool, sent string, v []byte) string {
	if same {
		return sent
	}
	return string(v)
}

// field is one field of a message: its number, wire type and value (a length-delimited field's
// bytes, or the encoded varint or fixed value of the others).
type field struct {
	num protowire.Number
	typ protowire.Type
	val []byte
}

// fieldsOf appends the fields of the message b to into; false if b is no message.
func fieldsOf(b []byte, into []field) ([]field, bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		var val []byte
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, false
			}
			val, n = v, m
		} else {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil, false
			}
			val = b[:n]
		}
		into = append(into, field{num, typ, val})
		b = b[n:]
	}
	return into, true
}

// only is the field numbered num if fs has it once.
func only(fs []field, num protowire.Number) (field, bool) {
	var out field
	n := 0
	for _, f := range fs {
		if f.num == num {
			out = f
			n++
		}
	}
	return out, n == 1
}

// repeats says whether fs has fs[i]'s number at another place too.
func repeats(fs []field, i int) bool {
	for j, f := range fs {
		if j != i && f.num == fs[i].num {
			return true
		}
	}
	return false
}

// first says whether fs[i] is the first of its number.
func first(fs []field, i int) bool {
	for _, f := range fs[:i] {
		if f.num == fs[i].num {
			return false
		}
	}
	return true
}

// sameAll says whether a and b have the same fields numbered num, in the same order.
func sameAll(a, b []field, num protowire.Number) bool {
	j := 0
	for _, f := range a {
		if f.num != num {
			continue
		}
		for j < len(b) && b[j].num != num {
			j++
		}
		if j == len(b) || b[j].typ != f.typ || !bytes.Equal(b[j].val, f.val) {
			return false
		}
		j++
	}
	for ; j < len(b); j++ {
		if b[j].num == num {
			return false
		}
	}
	return true
}
