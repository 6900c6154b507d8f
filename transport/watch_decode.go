package transport

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
)

// eventDecoder reads a watch body as it arrives, in pieces cut anywhere (a transport's DATA frames
// or reads), and hands each event to its handler as soon as its last byte is in. Both watchers feed
// it: the wire watcher on its connection's reader goroutine, the legacy one on its stream's.
//
// An event that lies whole in one piece is decoded where it lies; only an event cut across pieces
// is copied, into a buffer taken from a pool while the event is incomplete and given back when it
// is done, so an idle stream holds no buffer at all.
type eventDecoder struct {
	h    agent.WatchHandler
	json bool // the server answered JSON: events are objects one after another
	pods bool // decode each event's object into a pod (agent.WatchRequest.Pods)
	gzip bool // the body is gzipped (see writeGzip)

	partial *[]byte // the incomplete event's bytes so far; nil: none

	// protobuf: each event is a 4-byte big-endian length, then a metav1.WatchEvent.
	size  [4]byte
	have  uint8 // bytes of size read
	sized bool  // size is complete: need is the event's length
	need  int

	// gzip: the inflater of a member cut across pieces, while it lasts (see writeGzip), and how
	// much of the member's output the events have had.
	member *memberInflater
	fed    int

	// JSON: where the scan is within the event being read.
	depth    int
	inString bool
	escaped  bool
}

// maxWatchEvent bounds one event as client-go's streaming decoder does (maxBytes,
// k8s.io/apimachinery/pkg/runtime/serializer/streaming): a kubelet's watch could not read a larger
// one either.
const maxWatchEvent = 16 << 20

// keepPartial is the largest buffer given back to the pool: a buffer grown for a rare large event
// is left to the garbage collector rather than kept.
const keepPartial = 64 << 10

var partials = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// Write reads p. It returns the error that ends the stream: the Status of an ERROR event (as an
// *errors.StatusError), or why the stream cannot be read.
func (d *eventDecoder) Write(p []byte) error {
	if d.gzip {
		return d.writeGzip(p)
	}
	return d.events(p)
}

func (d *eventDecoder) events(p []byte) error {
	if d.json {
		return d.writeJSON(p)
	}
	return d.writeProtobuf(p)
}

// End says the body ended: an event cut off by the end is an unexpected EOF. It gives back the
// buffer of an incomplete event.
func (d *eventDecoder) End() error {
	incomplete := d.partial != nil || d.member != nil || d.have > 0 || d.sized || d.depth > 0
	d.release()
	d.endMember()
	d.have, d.sized, d.depth, d.inString, d.escaped = 0, false, 0, false, false
	if incomplete {
		return io.ErrUnexpectedEOF
	}
	return nil
}

func (d *eventDecoder) writeProtobuf(p []byte) error {
	for {
		if !d.sized {
			if len(p) == 0 {
				return nil
			}
			n := copy(d.size[d.have:], p)
			d.have += uint8(n)
			p = p[n:]
			if d.have < 4 {
				return nil
			}
			d.have = 0
			size := binary.BigEndian.Uint32(d.size[:])
			if size > maxWatchEvent {
				return fmt.Errorf("watch stream: an event of %d bytes, above the %d a watch reads", size, maxWatchEvent)
			}
			d.sized, d.need = true, int(size)
		}
		if d.partial == nil && len(p) >= d.need {
			event := p[:d.need]
			p = p[d.need:]
			d.sized = false
			if err := d.protobufEvent(event); err != nil {
				return err
			}
			continue
		}
		if len(p) == 0 {
			return nil
		}
		buf := d.buffer()
		n := min(d.need-len(*buf), len(p))
		*buf = append(*buf, p[:n]...)
		p = p[n:]
		if len(*buf) < d.need {
			return nil
		}
		d.sized = false
		err := d.protobufEvent(*buf)
		d.release()
		if err != nil {
			return err
		}
	}
}

func (d *eventDecoder) protobufEvent(b []byte) error {
	e, status, err := decodeProtobufEvent(b, d.pods)
	if err != nil {
		return err
	}
	if status != nil {
		return apierrors.FromObject(status)
	}
	d.h.Event(e)
	return nil
}

// writeJSON finds where each top-level object ends by tracking strings and nesting, and decodes it.
func (d *eventDecoder) writeJSON(p []byte) error {
	start := 0 // where the part of the current event in p begins
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case d.depth == 0:
			switch c {
			case ' ', '\t', '\r', '\n':
				start = i + 1
				continue
			case '{':
				start = i
				d.depth = 1
				continue
			}
			return fmt.Errorf("watch stream: unexpected %q between JSON events", c)
		case d.inString:
			switch {
			case d.escaped:
				d.escaped = false
			case c == '\\':
				d.escaped = true
			case c == '"':
				d.inString = false
			}
			continue
		case c == '"':
			d.inString = true
			continue
		case c == '{' || c == '[':
			d.depth++
			continue
		case c == '}' || c == ']':
			d.depth--
		default:
			continue
		}
		if d.depth > 0 {
			continue
		}
		event := p[start : i+1]
		if d.partial != nil {
			buf := d.buffer()
			if len(*buf)+len(event) > maxWatchEvent {
				return errJSONEventTooLarge
			}
			*buf = append(*buf, event...)
			event = *buf
		}
		err := d.jsonEvent(event)
		d.release()
		if err != nil {
			return err
		}
		start = i + 1
	}
	if d.depth > 0 && start < len(p) {
		buf := d.buffer()
		if len(*buf)+len(p)-start > maxWatchEvent {
			return errJSONEventTooLarge
		}
		*buf = append(*buf, p[start:]...)
	}
	return nil
}

var errJSONEventTooLarge = fmt.Errorf("watch stream: an event above the %d bytes a watch reads", maxWatchEvent)

// jsonEvent is what is read of a JSON watch event.
type jsonEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

type jsonMeta struct {
	Metadata struct {
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
}

func (d *eventDecoder) jsonEvent(b []byte) error {
	var e jsonEvent
	if err := json.Unmarshal(b, &e); err != nil {
		return err
	}
	if e.Type == "ERROR" {
		var s metav1.Status
		if err := json.Unmarshal(e.Object, &s); err != nil {
			return err
		}
		return apierrors.FromObject(&s)
	}
	var m jsonMeta
	if err := json.Unmarshal(e.Object, &m); err != nil {
		return err
	}
	ev := agent.WatchEvent{Type: e.Type, ResourceVersion: m.Metadata.ResourceVersion,
		InitialEventsEnd: m.Metadata.Annotations[metav1.InitialEventsAnnotationKey] == "true"}
	if d.pods && e.Type != agent.EventBookmark {
		ev.Pod = &corev1.Pod{}
		if err := json.Unmarshal(e.Object, ev.Pod); err != nil {
			return fmt.Errorf("decode a pod of the watch: %w", err)
		}
		ev.Pod.ManagedFields = nil
	}
	d.h.Event(ev)
	return nil
}

// buffer returns the incomplete event's buffer, taking one from the pool when there is none. It
// grows as the event's bytes arrive, never to the length a protobuf event claims before they have:
// that length is the server's word, and a stream could otherwise hold maxWatchEvent for ten bytes.
func (d *eventDecoder) buffer() *[]byte {
	if d.partial == nil {
		d.partial = partials.Get().(*[]byte)
	}
	return d.partial
}

func (d *eventDecoder) release() {
	if d.partial == nil {
		return
	}
	if cap(*d.partial) <= keepPartial {
		*d.partial = (*d.partial)[:0]
		partials.Put(d.partial)
	}
	d.partial = nil
}
