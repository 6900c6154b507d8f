package standin

import (
	"encoding/binary"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// Watch event types, as metav1.WatchEvent names them.
const (
	added    = "ADDED"
	modified = "MODIFIED"
	deleted  = "DELETED"
	bookmark = "BOOKMARK"
)

// event is one watch event: its type and the object it carries.
type event struct {
	typ string
	e   *entry
}

// frames are the buffers events are framed in, one at a time.
var frames = sync.Pool{New: func() any { return new([]byte) }}

// writeEvent writes ev to a watch stream as the apiserver frames it: a metav1.WatchEvent with the
// object's own body inside, length-prefixed, in protobuf; a line of JSON otherwise. The frame goes
// in one Write, so that a stream's writes are what they were when each event was a slice of its
// own; its buffer is reused once the Write is done with it, and dropped if the Write failed (a
// stream that ended may not have let go of it).
func writeEvent(w io.Writer, ev event, asJSON bool) error {
	bp := frames.Get().(*[]byte)
	b := appendFrame((*bp)[:0], ev, asJSON)
	if _, err := w.Write(b); err != nil {
		return err
	}
	*bp = b
	frames.Put(bp)
	return nil
}

func appendFrame(b []byte, ev event, asJSON bool) []byte {
	if asJSON {
		b = append(b, `{"type":"`...)
		b = append(b, ev.typ...)
		b = append(b, `","object":`...)
		b = append(b, ev.e.body(true)...)
		return append(b, "}\n"...)
	}
	// {string type = 1; RawExtension object = 2 {bytes raw = 1}}, as their generated Marshal writes them.
	object := protowire.SizeTag(1) + protowire.SizeBytes(len(ev.e.pb))
	size := protowire.SizeTag(1) + protowire.SizeBytes(len(ev.typ)) + protowire.SizeTag(2) + protowire.SizeBytes(object)
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	b = protowire.AppendString(protowire.AppendTag(b, 1, protowire.BytesType), ev.typ)
	b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.BytesType), uint64(object))
	return protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), ev.e.pb)
}

// watcher is one open watch: what it selects and the events queued for its stream.
type watcher struct {
	namespace string
	sel       selector
	json      bool
	events    chan event
	// dropped is closed when the store ends the watch because its queue was full.
	dropped chan struct{}
	// index is the field and value the watch is found by: an exact metadata.name or spec.nodeName
	// in its field selector, as a kubelet's watches have; "" for one that sees every change.
	indexField, indexValue string
}

// indexedFields are the exact field requirements watches are indexed by, so that a change reaches
// the watches that can select it without a look at the others: a kubelet's Node and pods.
var indexedFields = []string{"metadata.name", "spec.nodeName"}

type watcherSet struct {
	all map[*watcher]struct{}
	by  map[string]map[string]map[*watcher]struct{} // field, value
}

func newWatcherSet() watcherSet {
	ws := watcherSet{all: map[*watcher]struct{}{}, by: map[string]map[string]map[*watcher]struct{}{}}
	for _, f := range indexedFields {
		ws.by[f] = map[string]map[*watcher]struct{}{}
	}
	return ws
}

func (ws watcherSet) add(w *watcher) {
	for _, f := range indexedFields {
		if w.sel.fields == nil {
			break
		}
		if v, ok := w.sel.fields.RequiresExactMatch(f); ok {
			w.indexField, w.indexValue = f, v
			set := ws.by[f][v]
			if set == nil {
				set = map[*watcher]struct{}{}
				ws.by[f][v] = set
			}
			set[w] = struct{}{}
			return
		}
	}
	ws.all[w] = struct{}{}
}

func (ws watcherSet) remove(w *watcher) {
	if w.indexField == "" {
		delete(ws.all, w)
		return
	}
	set := ws.by[w.indexField][w.indexValue]
	delete(set, w)
	if len(set) == 0 {
		delete(ws.by[w.indexField], w.indexValue)
	}
}

// The kinds of event, by which send shares one event among the watches told the same.
const (
	isModified = iota
	isAdded
	isDeleted
)

var eventTypes = [...]string{isModified: modified, isAdded: added, isDeleted: deleted}

// seenAs is the event a watch is told of a change from old to now (either nil for a create or a
// delete): ADDED, MODIFIED or DELETED as its selector saw the object before and after, as the
// apiserver's cacher does; false if it selects neither.
func (w *watcher) seenAs(old, now *entry) (int, bool) {
	was := old != nil && w.sel.matches(w.namespace, old)
	is := now != nil && w.sel.matches(w.namespace, now)
	switch {
	case was && is:
		return isModified, true
	case is:
		return isAdded, true
	case was:
		return isDeleted, true
	}
	return 0, false
}

// send tells the watches of one change from old to now, carried as obj. The store's mu is held.
func (ws watcherSet) send(old, now, obj *entry) {
	for w := range ws.all {
		ws.deliver(w, old, now, obj)
	}
	// A watch is indexed by one field and value: the old and new values of each field reach
	// distinct watches, and the same value only once.
	for _, f := range indexedFields {
		var was string
		if old != nil {
			was = old.field(f)
			for w := range ws.by[f][was] {
				ws.deliver(w, old, now, obj)
			}
		}
		if now != nil && (old == nil || now.field(f) != was) {
			for w := range ws.by[f][now.field(f)] {
				ws.deliver(w, old, now, obj)
			}
		}
	}
}

// deliver queues the change for w if its selector sees it.
func (ws watcherSet) deliver(w *watcher, old, now, obj *entry) {
	if i, ok := w.seenAs(old, now); ok {
		w.queue(ws, event{typ: eventTypes[i], e: obj})
	}
}

// queue hands ev to the watch's stream, or ends a watch whose stream has fallen a whole queue
// behind; its client resumes it from the store's history. The store's mu is held.
func (w *watcher) queue(ws watcherSet, ev event) {
	select {
	case w.events <- ev:
	default:
		ws.remove(w)
		close(w.dropped)
	}
}
