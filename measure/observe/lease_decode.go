package observe

import (
	"bytes"
	"errors"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"fakelet.dev/fakelet/internal/protofield"
)

// leaseCodecs are client-go's protobuf codecs with a decoder of Leases that reads only what the
// Lease watch compares (name, namespace, uid, resourceVersion and renewTime, and the
// initial-events-end annotation of a streaming list's bookmark), from the fields' bytes: the watch
// sees every renewal of the fleet, and client-go's decoding of each Lease whole, its managedFields
// included, was most of the watch's cost. Anything other than a Lease (a Status, a LeaseList) is decoded by client-go's codec.
type leaseCodecs struct {
	runtime.NegotiatedSerializer
}

func newLeaseCodecs() leaseCodecs { return leaseCodecs{scheme.Codecs.WithoutConversion()} }

// SupportedMediaTypes is protobuf only, with the Lease decoder and the watch events' decoder: the
// watch asks for nothing else.
func (c leaseCodecs) SupportedMediaTypes() []runtime.SerializerInfo {
	for _, info := range c.NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf {
			info.Serializer = leaseDecoder{info.Serializer}
			if info.StreamSerializer != nil {
				stream := *info.StreamSerializer
				stream.Serializer = watchEventDecoder{stream.Serializer}
				info.StreamSerializer = &stream
			}
			return []runtime.SerializerInfo{info}
		}
	}
	return nil
}

// watchEventDecoder decodes a protobuf watch event (a frame of the stream: the WatchEvent's bytes,
// with no envelope) without copying its object out of the frame:
// client-go's watch decoder decodes the object from the event before it reads the next frame, and
// every renewal of the fleet is an event here. Anything but a WatchEvent is Serializer's.
type watchEventDecoder struct {
	runtime.Serializer
}

func (d watchEventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	e, ok := into.(*metav1.WatchEvent)
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	*e = metav1.WatchEvent{}
	err := eachField(data, func(num protowire.Number, v []byte) error {
		switch num {
		case watchEventType:
			e.Type = eventType(v)
		case watchEventObject:
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num == rawExtensionRaw {
					e.Object.Raw = v
				}
				return nil
			})
		}
		return nil
	})
	gvk := watchEventKind
	return e, &gvk, err
}

var watchEventKind = metav1.SchemeGroupVersion.WithKind("WatchEvent")

// eventType is the event type v spells, one of watch's constants rather than a copy per event.
func eventType(v []byte) string {
	for _, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if string(v) == string(t) {
			return string(t)
		}
	}
	return string(v)
}

// leaseDecoder decodes a Lease's protobuf lean, and hands anything else to Serializer.
type leaseDecoder struct {
	runtime.Serializer
}

var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

var leaseKind = coordinationv1.SchemeGroupVersion.WithKind("Lease")

func (d leaseDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if raw, ok := leaseBytes(data); ok {
		l, err := decodeLease(raw)
		if err != nil {
			return nil, nil, err
		}
		gvk := leaseKind
		return l, &gvk, nil
	}
	return d.Serializer.Decode(data, defaults, into)
}

// Encode is not the decoder's: the watch sends no body.
func (d leaseDecoder) Encode(obj runtime.Object, w io.Writer) error {
	return d.Serializer.Encode(obj, w)
}

func (d leaseDecoder) Identifier() runtime.Identifier { return "fakelet-lease-protobuf" }

// The fields read, from k8s.io/apimachinery's and k8s.io/api's generated.proto.
const (
	unknownTypeMeta  = 1 // runtime.Unknown.typeMeta
	unknownRaw       = 2 // runtime.Unknown.raw
	watchEventType   = 1 // metav1.WatchEvent.type
	watchEventObject = 2 // metav1.WatchEvent.object, a RawExtension
	rawExtensionRaw  = 1 // runtime.RawExtension.raw
	typeMetaKind     = 2 // runtime.TypeMeta.kind
	leaseMetadata    = 1 // Lease.metadata
	leaseSpec        = 2 // Lease.spec
	metaName         = 1 // ObjectMeta.name
	metaNamespace    = 3
	metaUID          = 5
	metaRV           = 6
	metaAnnotations  = 12
	specRenewTime    = 4 // LeaseSpec.renewTime, a MicroTime
	timeSeconds      = 1 // MicroTime.seconds
	timeNanos        = 2
)

var errBadLease = errors.New("undecodable protobuf Lease")

// leaseBytes returns the Lease inside a protobuf envelope (the magic, then a runtime.Unknown), or
// false for anything else.
func leaseBytes(b []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, protobufMagic)
	if !ok {
		return nil, false
	}
	var kind, raw []byte
	err := eachField(rest, func(num protowire.Number, v []byte) error {
		switch num {
		case unknownTypeMeta:
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num == typeMetaKind {
					kind = v
				}
				return nil
			})
		case unknownRaw:
			raw = v
		}
		return nil
	})
	return raw, err == nil && string(kind) == leaseKind.Kind
}

// decodeLease reads a Lease's name, namespace, uid, resourceVersion, renewTime and the
// initial-events-end annotation.
func decodeLease(b []byte) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	err := eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case leaseMetadata:
			return decodeMeta(v, &l.ObjectMeta)
		case leaseSpec:
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num != specRenewTime {
					return nil
				}
				t, err := decodeMicroTime(v)
				l.Spec.RenewTime = &t
				return err
			})
		}
		return nil
	})
	return l, err
}

func decodeMeta(b []byte, m *metav1.ObjectMeta) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case metaName:
			m.Name = string(v)
		case metaNamespace:
			m.Namespace = leaseNamespace
			if string(v) != leaseNamespace {
				m.Namespace = string(v)
			}
		case metaUID:
			m.UID = types.UID(v)
		case metaRV:
			m.ResourceVersion = string(v)
		case metaAnnotations:
			key, value, err := protofield.MapEntry(v, errBadLease)
			if err != nil {
				return err
			}
			if string(key) == metav1.InitialEventsAnnotationKey {
				m.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: string(value)}
			}
		}
		return nil
	})
}

// decodeMicroTime reads a MicroTime's seconds and nanoseconds, its two varint fields.
func decodeMicroTime(b []byte) (metav1.MicroTime, error) {
	var sec, nsec int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return metav1.MicroTime{}, errBadLease
		}
		b = b[n:]
		if typ != protowire.VarintType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return metav1.MicroTime{}, errBadLease
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return metav1.MicroTime{}, errBadLease
		}
		b = b[n:]
		switch num {
		case timeSeconds:
			sec = int64(v)
		case timeNanos:
			nsec = int64(int32(v))
		}
	}
	return metav1.NewMicroTime(time.Unix(sec, nsec).Local()), nil
}

func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	return protofield.Each(b, f, errBadLease)
}
