package standin

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// initialEventsEnd is the annotation of the bookmark that ends a streaming list's initial events.
const initialEventsEnd = "k8s.io/initial-events-end"

// parseSelector reads a request's label and field selectors; a field the kind does not offer is a
// 400, as from the apiserver.
func parseSelector(r *resource, q url.Values) (selector, error) {
	var sel selector
	if v := q.Get("labelSelector"); v != "" {
		l, err := labels.Parse(v)
		if err != nil {
			return sel, apierrors.NewBadRequest(err.Error())
		}
		sel.labels = l
	}
	if v := q.Get("fieldSelector"); v != "" {
		f, err := fields.ParseSelector(v)
		if err != nil {
			return sel, apierrors.NewBadRequest(err.Error())
		}
		offered := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		if r.fields != nil {
			obj, err := newObject(r)
			if err != nil {
				return sel, apierrors.NewInternalError(err)
			}
			for k := range r.fields(obj) {
				offered[k] = true
			}
		}
		for _, req := range f.Requirements() {
			if !offered[req.Field] {
				return sel, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
		sel.fields = f
	}
	return sel, nil
}

// list answers a LIST with every matching object, whole: the stand-in never pages.
func (s *Server) list(w http.ResponseWriter, req *http.Request, st *store, t target, asJSON bool) int {
	sel, err := parseSelector(t.res, req.URL.Query())
	if err != nil {
		return s.fail(w, req, asJSON, err)
	}
	items, rv := st.list(t.namespace, sel)
	slices.SortFunc(items, func(a, b *entry) int {
		return strings.Compare(key(a.meta.GetNamespace(), a.meta.GetName()), key(b.meta.GetNamespace(), b.meta.GetName()))
	})
	listKind := t.res.kind + "List"
	var body []byte
	if asJSON {
		body = fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"%d"},"items":[`, listKind, t.res.apiVersion, rv)
		for i, e := range items {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, e.body(true)...)
		}
		body = append(body, "]}"...)
	} else {
		// Every list kind is the message {ListMeta metadata = 1; repeated Kind items = 2}.
		lm := metav1.ListMeta{ResourceVersion: resourceVersionOf(rv)}
		lmRaw, _ := lm.Marshal()
		raw := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), lmRaw)
		for _, e := range items {
			raw = protowire.AppendBytes(protowire.AppendTag(raw, 2, protowire.BytesType), e.raw)
		}
		body = envelope(t.res.apiVersion, listKind, raw)
	}
	s.answer(w, http.StatusOK, contentType(asJSON), body)
	return http.StatusOK
}

// watch serves one watch stream until its timeout, its client's end, or the store ends it as too
// slow. With sendInitialEvents=true (a streaming list), or at resourceVersion "" or "0", it begins
// with an ADDED event of each matching object, as the apiserver's watch cache does, and a streaming
// list then sends the bookmark that ends them; at another resourceVersion, with the changes after
// it that the store's history holds.
func (s *Server) watch(w http.ResponseWriter, req *http.Request, st *store, t target, asJSON bool) int {
	q := req.URL.Query()
	sel, err := parseSelector(t.res, q)
	if err != nil {
		return s.fail(w, req, asJSON, err)
	}
	timeout := time.Duration(float64(s.o.MinRequestTimeout) * (1 + rand.Float64()))
	if v := q.Get("timeoutSeconds"); v != "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs < 0 {
			return s.fail(w, req, asJSON, apierrors.NewBadRequest("timeoutSeconds: "+v))
		}
		timeout = time.Duration(secs) * time.Second
	}
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	streaming := q.Get("sendInitialEvents") == "true"
	if streaming && !bookmarks {
		return s.fail(w, req, asJSON, apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the allowWatchBookmarks is true"))
	}
	rv := q.Get("resourceVersion")
	initial := streaming || (q.Get("sendInitialEvents") == "" && (rv == "" || rv == "0"))

	wt := &watcher{namespace: t.namespace, sel: sel, json: asJSON,
		events: make(chan event, s.o.WatchBuffer), dropped: make(chan struct{})}
	st.mu.Lock()
	var missed []past
	if from, err := strconv.ParseUint(rv, 10, 64); !initial && err == nil {
		var ok bool
		if missed, ok = st.history.since(from); !ok {
			forgotten := st.history.forgotten
			st.mu.Unlock()
			return s.fail(w, req, asJSON, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, forgotten)))
		}
	}
	st.watchers.add(wt)
	var snapshot []*entry
	if initial {
		snapshot = st.matching(t.namespace, sel)
	}
	at := s.rv.Load()
	st.mu.Unlock()
	s.counts.watches.Add(1)
	defer s.counts.watches.Add(-1)
	defer func() {
		st.mu.Lock()
		st.watchers.remove(wt)
		st.mu.Unlock()
	}()

	ct := jsonType
	if !asJSON {
		ct = protobufType + ";stream=watch"
	}
	s.setHeaders(w.Header(), ct)
	var out io.Writer = w
	var gz *memberWriter
	if streaming && acceptsGzip(req.Header) {
		w.Header()["Content-Encoding"] = gzipEncoding
		w.Header()["Vary"] = varyEncoding
		gz = &memberWriter{w: w}
		out = gz
		defer gz.release()
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if gz != nil && gz.endMember() != nil {
			return // the stream is broken: the next write says so
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	for _, e := range snapshot {
		if err := writeEvent(out, event{typ: added, e: e}, asJSON); err != nil {
			return http.StatusOK
		}
	}
	if streaming {
		if err := writeEvent(out, s.bookmark(t.res, at, true), asJSON); err != nil {
			return http.StatusOK
		}
	}
	for _, p := range missed {
		if i, ok := wt.seenAs(p.old, p.now); ok {
			if err := writeEvent(out, event{typ: eventTypes[i], e: p.obj}, asJSON); err != nil {
				return http.StatusOK
			}
		}
	}
	flush()

	end := s.o.Clock.NewTimer(timeout)
	defer end.Stop()
	var tick <-chan time.Time
	if bookmarks {
		bt := s.o.Clock.NewTicker(s.o.Bookmarks)
		defer bt.Stop()
		tick = bt.C()
	}
	for {
		select {
		case ev := <-wt.events:
			if err := writeEvent(out, ev, asJSON); err != nil {
				return http.StatusOK
			}
			if len(wt.events) == 0 {
				flush()
			}
		case <-tick:
			if err := writeEvent(out, s.bookmark(t.res, s.rv.Load(), false), asJSON); err != nil {
				return http.StatusOK
			}
			flush()
		case <-wt.dropped:
			return http.StatusOK
		case <-end.C():
			return http.StatusOK
		case <-req.Context().Done():
			return http.StatusOK
		}
	}
}

// bookmark is a BOOKMARK event at rv: an object of the kind with nothing but its resourceVersion
// (and, ending a streaming list's initial events, their annotation).
func (s *Server) bookmark(r *resource, rv uint64, endsInitial bool) event {
	obj, err := newObject(r)
	if err != nil {
		panic(err) // every kind of the resource table is in the scheme
	}
	m := mustAccessor(obj)
	m.SetResourceVersion(resourceVersionOf(rv))
	if endsInitial {
		m.SetAnnotations(map[string]string{initialEventsEnd: "true"})
	}
	e, err := newEntry(r, obj, rv)
	if err != nil {
		panic(err)
	}
	return event{typ: bookmark, e: e}
}
