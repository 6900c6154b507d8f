package fleet

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
)

// httpWatcher carries the agents' watches over the fleet's heartbeat connections (agent.Watcher),
// with the kubelet's content type (protobuf), User-Agent and, through the connection's
// impersonateNode, the node's identity. It reads of each event only its type, its object's resource
// version and the initial-events-end annotation, without decoding the object.
//
// Each stream has a goroutine of its own, reading its response body: the simple first
// implementation, whose cost grows with the watches held (docs/performance.md). The fleet's own
// HTTP/2 transport will carry them without one.
type httpWatcher struct {
	client *http.Client // without a client timeout: a watch lasts as long as the server keeps it
	base   url.URL
	accept string
	agent  string
}

func newHTTPWatcher(hc *http.Client, cfg *rest.Config) (*httpWatcher, error) {
	base, err := url.Parse(cfg.Host)
	if err != nil || base.Host == "" {
		// rest.Config takes a bare host:port too.
		if base, err = url.Parse("https://" + cfg.Host); err != nil {
			return nil, fmt.Errorf("watch client: host %q: %w", cfg.Host, err)
		}
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	return &httpWatcher{
		client: &http.Client{Transport: hc.Transport},
		base:   *base,
		accept: cfg.AcceptContentTypes,
		agent:  cfg.UserAgent,
	}, nil
}

// Watch implements agent.Watcher.
func (w *httpWatcher) Watch(ctx context.Context, req agent.WatchRequest, h agent.WatchHandler) {
	go w.stream(ctx, req, h)
}

func (w *httpWatcher) stream(ctx context.Context, req agent.WatchRequest, h agent.WatchHandler) {
	u := w.base
	u.Path += req.Path
	u.RawQuery = req.Query.Encode()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		h.Opened(err)
		return
	}
	hr.Header.Set("Accept", w.accept)
	if w.agent != "" {
		hr.Header.Set("User-Agent", w.agent)
	}
	resp, err := w.client.Do(hr)
	if err != nil {
		h.Opened(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		h.Opened(statusError(resp, body, req.Resource))
		return
	}
	h.Opened(nil)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == protobuf {
		h.Ended(readProtobufEvents(resp.Body, h))
	} else {
		h.Ended(readJSONEvents(resp.Body, h))
	}
}

// readProtobufEvents reads a protobuf watch stream: each frame a length and a metav1.WatchEvent.
func readProtobufEvents(body io.Reader, h agent.WatchHandler) error {
	r := bufio.NewReaderSize(body, 4096)
	var buf []byte
	var size [4]byte
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the server closed the stream between events: its timeout
			}
			return err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 64<<20 {
			return fmt.Errorf("watch event of %d bytes", n)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		e, status, err := decodeProtobufEvent(buf)
		if err != nil {
			return err
		}
		if status != nil {
			return apierrors.FromObject(status)
		}
		h.Event(e)
	}
}

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

// readJSONEvents reads a JSON watch stream, for an apiserver that answers in JSON.
func readJSONEvents(body io.Reader, h agent.WatchHandler) error {
	dec := json.NewDecoder(body)
	for {
		var e jsonEvent
		if err := dec.Decode(&e); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
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
		h.Event(agent.WatchEvent{Type: e.Type, ResourceVersion: m.Metadata.ResourceVersion,
			InitialEventsEnd: m.Metadata.Annotations[metav1.InitialEventsAnnotationKey] == "true"})
	}
}

// statusError is the error of a refused watch, from the Status the apiserver sent if it can be read.
func statusError(resp *http.Response, body []byte, resource string) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var s *metav1.Status
	switch mt {
	case protobuf:
		s, _ = decodeProtobufStatus(body)
	case "application/json":
		var js metav1.Status
		if json.Unmarshal(body, &js) == nil && js.Kind == "Status" {
			s = &js
		}
	}
	if s != nil && s.Code != 0 {
		return apierrors.FromObject(s)
	}
	retry := 0
	if v := resp.Header.Get("Retry-After"); v != "" {
		fmt.Sscan(v, &retry)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "watch", schema.GroupResource{Resource: resource}, "", string(body), retry, true)
}
