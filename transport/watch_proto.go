package transport

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/protofield"
)

// A protobuf watch event is read field by field, as far as an agent needs it, without decoding the
// object (proto_fields.go names the fields).

var errBadEvent = errors.New("undecodable Protobuf watch event")

// decodeProtobufEvent reads one event's type, resource version and initial-events-end annotation,
// and with pods the whole object as a pod (its managed fields dropped); for
// an ERROR event it returns the Status instead.
func decodeProtobufEvent(b []byte, pods bool) (agent.WatchEvent, *metav1.Status, error) {
	var e agent.WatchEvent
	var object []byte
	err := eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case watchEventType:
			switch string(v) { // the constants, not a copy per event
			case agent.EventAdded:
				e.Type = agent.EventAdded
			case agent.EventModified:
				e.Type = agent.EventModified
			case agent.EventDeleted:
				e.Type = agent.EventDeleted
			case agent.EventBookmark:
				e.Type = agent.EventBookmark
			default:
				e.Type = string(v)
			}
		case watchEventObject:
			return eachField(v, func(num protowire.Number, v []byte) error {
				if num == rawExtensionRaw {
					object = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return e, nil, err
	}
	raw, err := unwrap(object)
	if err != nil {
		return e, nil, err
	}
	if e.Type == "ERROR" {
		var s metav1.Status
		if err := s.Unmarshal(raw); err != nil {
			return e, nil, fmt.Errorf("watch error event: %w", err)
		}
		return e, &s, nil
	}
	if pods && e.Type != agent.EventBookmark {
		e.Pod = &corev1.Pod{}
		if err := e.Pod.Unmarshal(raw); err != nil {
			return e, nil, fmt.Errorf("decode a pod of the watch: %w", err)
		}
		e.Pod.ManagedFields = nil
	}
	err = eachField(raw, func(num protowire.Number, v []byte) error {
		if num != objectMetadata {
			return nil
		}
		return eachField(v, func(num protowire.Number, v []byte) error {
			switch num {
			case metaRV:
				e.ResourceVersion = string(v)
			case metaAnnotations:
				key, value, err := protofield.MapEntry(v, errBadEvent)
				if err != nil {
					return err
				}
				if string(key) == metav1.InitialEventsAnnotationKey && string(value) == "true" {
					e.InitialEventsEnd = true
				}
			}
			return nil
		})
	})
	return e, nil, err
}

// decodeProtobufStatus reads the Status of a refused request's protobuf body.
func decodeProtobufStatus(body []byte) (*metav1.Status, error) {
	raw, err := unwrap(body)
	if err != nil {
		return nil, err
	}
	var s metav1.Status
	if err := s.Unmarshal(raw); err != nil {
		return nil, err
	}
	return &s, nil
}

// unwrap returns the object inside a protobuf envelope: the magic, then a runtime.Unknown.
func unwrap(b []byte) ([]byte, error) {
	_, _, raw, ok := protofield.Envelope(b)
	if !ok {
		return nil, errBadEvent
	}
	return raw, nil
}

// eachField calls f with each length-delimited field of the message b, skipping the others.
func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	return protofield.Each(b, f, errBadEvent)
}
