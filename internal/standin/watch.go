package standin

import (
	"encoding/binary"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Watch event types, as metav1.WatchEvent names them.
const (
	added    = "ADDED"
	modified = "MODIFIED"
	deleted  = "DELETED"
	bookmark = "BOOKMARK"
)

// event is one watch event, framed once per encoding however many watches carry it.
type event struct {
	typ string
	e   *entry

	pbOnce, jsonOnce sync.Once
	pb, json         []byte
}

// frame is the event as the apiserver writes it on a watch stream: a metav1.WatchEvent with the
// object's own body inside, length-prefixed in protobuf, a line of JSON otherwise.
func (ev *event) frame(asJSON bool) []byte {
	if asJSON {
		ev.jsonOnce.Do(func() {
			obj := ev.e.body(true)
			b := make([]byte, 0, len(obj)+32)
			b = append(b, `{"type":"`...)
			b = append(b, ev.typ...)
			b = append(b, `","object":`...)
			b = append(b, obj...)
			ev.json = append(b, "}\n"...)
		})
		return ev.json
	}
	ev.pbOnce.Do(func() {
		we := metav1.WatchEvent{Type: ev.typ, Object: runtime.RawExtension{Raw: ev.e.pb}}
		b := make([]byte, 4+we.Size())
		binary.BigEndian.PutUint32(b, uint32(we.Size()))
		if _, err := we.MarshalToSizedBuffer(b[4:]); err != nil {
			panic(err) // a sized buffer of the message's own size
		}
		ev.pb = b
	})
	return ev.pb
}

// watcher is one open watch: what it selects and the events queued for its stream.
type watcher struct {
	namespace string
	sel       selector
	json      bool
	events    chan *event
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
	var shared [3]*event // by type, made for the first watch that needs it
	deliver := func(w *watcher) {
		i, ok := w.seenAs(old, now)
		if !ok {
			return
		}
		if shared[i] == nil {
			shared[i] = &event{typ: eventTypes[i], e: obj}
		}
		w.queue(ws, shared[i])
	}
	for w := range ws.all {
		deliver(w)
	}
	// A watch is indexed by one field and value: the old and new values of each field reach
	// distinct watches, and the same value only once.
	for _, f := range indexedFields {
		var was string
		if old != nil {
			was = old.field(f)
			for w := range ws.by[f][was] {
				deliver(w)
			}
		}
		if now != nil && (old == nil || now.field(f) != was) {
			for w := range ws.by[f][now.field(f)] {
				deliver(w)
			}
		}
	}
}

// queue hands ev to the watch's stream, or ends a watch whose stream has fallen a whole queue
// behind; its client resumes it from the store's history. The store's mu is held.
func (w *watcher) queue(ws watcherSet, ev *event) {
	select {
	case w.events <- ev:
	default:
		ws.remove(w)
		close(w.dropped)
	}
}
