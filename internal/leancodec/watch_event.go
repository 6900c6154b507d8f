package leancodec

import (
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// watchEventDecoder decodes a protobuf watch event (a frame of the stream: the WatchEvent's bytes,
// with no envelope) without copying its object out of the frame: client-go's watch decoder decodes
// the object from the event before it reads the next frame, and each change of a node of the fleet
// is an event here. Anything but a WatchEvent is Serializer's.
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
