// Package leancodec is client-go's protobuf codec for the watches that see an object of each of
// the fleet's nodes at every change of it (the measurement's Leases, the fleet's Nodes): it decodes
// the objects of one kind with a decoder of the watch's own, and watch events without copying their
// object out of the frame.
package leancodec

import (
	"errors"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"fakelet.dev/fakelet/internal/protofield"
)

// Codecs are client-go's protobuf codecs with the objects of one kind decoded from their bytes by a
// function when decoded on their own, as a watch event's are; decoding into a given object (a
// list's, a Get's) and any other kind (a Status) stays client-go's.
type Codecs struct {
	runtime.NegotiatedSerializer
	kind   schema.GroupVersionKind
	id     runtime.Identifier
	decode func(raw []byte) (runtime.Object, error)
}

// New returns Codecs that decode the objects of kind with decode, given the bytes inside their
// protobuf envelope; id names that decoding (runtime.Identifier).
func New(kind schema.GroupVersionKind, id runtime.Identifier, decode func(raw []byte) (runtime.Object, error)) Codecs {
	return Codecs{scheme.Codecs.WithoutConversion(), kind, id, decode}
}

// SupportedMediaTypes is protobuf only, with the kind's decoder and the watch events' decoder: the
// watches ask for nothing else.
func (c Codecs) SupportedMediaTypes() []runtime.SerializerInfo {
	for _, info := range c.NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf {
			info.Serializer = objectDecoder{info.Serializer, c}
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

// objectDecoder decodes the objects of its Codecs' kind with their function, and hands anything
// else to Serializer.
type objectDecoder struct {
	runtime.Serializer
	c Codecs
}

func (d objectDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into == nil {
		if raw, ok := objectBytes(data, d.c.kind.Kind); ok {
			obj, err := d.c.decode(raw)
			if err != nil {
				return nil, nil, err
			}
			gvk := d.c.kind
			return obj, &gvk, nil
		}
	}
	return d.Serializer.Decode(data, defaults, into)
}

// Encode is not the decoder's: the watches send no body.
func (d objectDecoder) Encode(obj runtime.Object, w io.Writer) error {
	return d.Serializer.Encode(obj, w)
}

func (d objectDecoder) Identifier() runtime.Identifier { return d.c.id }

// The fields of a watch event read, from k8s.io/apimachinery's generated.proto.
const (
	watchEventType   = 1 // metav1.WatchEvent.type
	watchEventObject = 2 // metav1.WatchEvent.object, a RawExtension
	rawExtensionRaw  = 1 // runtime.RawExtension.raw
)

var errBadProtobuf = errors.New("undecodable protobuf")

// objectBytes returns the object inside a protobuf envelope if it is of kind, or false.
func objectBytes(b []byte, kind string) ([]byte, bool) {
	_, got, raw, ok := protofield.Envelope(b)
	return raw, ok && string(got) == kind
}

func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	return protofield.Each(b, f, errBadProtobuf)
}
