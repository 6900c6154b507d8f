package transport

import (
	"context"
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
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/pause"
)

// httpWatcher carries the agents' watches over the fleet's heartbeat connections (agent.Watcher),
// with the kubelet's content type (protobuf), User-Agent and, through the connection's
// impersonateNode, the node's identity. It reads of each event only its type, its object's resource
// version and the initial-events-end annotation, without decoding the object.
//
// Each stream has a goroutine of its own, reading its response body, whose cost grows with the
// watches held (docs/performance.md): it carries the watches only where the wire package cannot
// (--legacy-wire, a plain-HTTP server); otherwise the wireWatcher does (transport/wire_watch.go).
type httpWatcher struct {
	client *http.Client // without a client timeout: a watch lasts as long as the server keeps it
	base   url.URL
	accept string
	agent  string
	clock  clock.Clock // of the Retry-After waits
}

func newHTTPWatcher(hc *http.Client, cfg *rest.Config, clk clock.Clock) (*httpWatcher, error) {
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
		clock:  clk,
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
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		if resp, err = w.client.Do(hr); err != nil {
			h.Opened(err)
			return
		}
		if resp.StatusCode == http.StatusOK {
			break
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
		resp.Body.Close()
		if wait, ok := (exchange{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}).retry(); ok && attempt < maxRetries {
			if err := pause.On(ctx, w.clock, wait); err != nil {
				h.Opened(err)
				return
			}
			continue
		}
		h.Opened(refusal(resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), body, req.Resource))
		return
	}
	defer resp.Body.Close()
	h.Opened(nil)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	h.Ended(readEvents(resp.Body, &eventDecoder{h: h, json: mt != Protobuf, pods: req.Pods}))
}

// readEvents feeds a watch body to d until it ends.
func readEvents(body io.Reader, d *eventDecoder) error {
	var chunk [4096]byte
	for {
		n, err := body.Read(chunk[:])
		if n > 0 {
			if err := d.Write(chunk[:n]); err != nil {
				d.End()
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return d.End() // the server closed the stream: its timeout
		}
		if err != nil {
			d.End()
			return err
		}
	}
}

// refusal is the error of a refused watch, from the Status the apiserver sent if it can be read,
// as client-go makes it; both watchers use it.
func refusal(code int, contentType, retryAfter string, body []byte, resource string) error {
	mt, _, _ := mime.ParseMediaType(contentType)
	var s *metav1.Status
	switch mt {
	case Protobuf:
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
	if retryAfter != "" {
		fmt.Sscan(retryAfter, &retry)
	}
	// client-go names a watch's verb as its method's.
	return apierrors.NewGenericServerResponse(code, "get", schema.GroupResource{Resource: resource}, "", string(body), retry, true)
}
