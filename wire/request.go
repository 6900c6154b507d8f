// Package wire is the fleet's own HTTP/2 client: many agents' requests and watch streams over a few
// connections to one apiserver, for the requests a fleet sends most (lease renewals, status patches,
// watches). Each connection has one writer and one reader goroutine and no goroutine per request or
// stream: callers queue a request, the writer encodes its frames with x/net/http2's Framer and hpack
// and writes what is queued together in one write, and the reader routes each answer's frames to the
// request's state by stream ID. Answers are returned as their status, the few headers a Kubernetes
// client reads, and the body's bytes; decoding is the caller's.
//
// What net/http's transport does that matters to an apiserver client, it does too: the server's
// SETTINGS (a new connection when MAX_CONCURRENT_STREAMS is reached), GOAWAY (requests the server
// did not take are sent again on a new connection), RST_STREAM, PING (answered, and sent after a
// silence as client-go's health check does), flow control both ways, a
// request sent again on a new connection when its connection fails before the request was written
// (with net/http's backoff from the second time), client-go's TLS handshake timeout, the proxy
// client-go would go through, credentials renewed after a 401 as client-go's exec plugins and
// token sources are, and the same errors (a *url.Error naming the method and URL) for what fails
// on the wire. What a server can make it hold is bounded: connections (Config.MaxConnections),
// control frames queued unwritten, a writer stuck on the socket (docs/reliability.md, "The wire
// path's limits").
package wire

import (
	"net/http"
	"strings"
)

// Field is one request header. Names are lower case, as HTTP/2 sends them.
type Field struct{ Name, Value string }

// Request is one request: its method, its path and query below the Client's host, its headers
// besides the pseudo-headers, credentials, Content-Length and Accept-Encoding, and its body.
//
// Header holds the fields many requests repeat (Accept, User-Agent, Content-Type): the connection's
// HPACK table indexes them, so each is a byte or two after its first time. Own holds the fields of
// one agent (an impersonated user), sent as literals never indexed, as the path is: with thousands
// of agents on a connection they would only evict each other and the shared fields from the table
// (BenchmarkHeaderBlock measures the choices).
type Request struct {
	Method string
	Path   string // with its query, e.g. /apis/coordination.k8s.io/v1/namespaces/n/leases/x?timeout=10s
	Header []Field
	Own    []Field
	Body   []byte
}

// Response is what the reader keeps of an answer.
type Response struct {
	Status          int
	ContentType     string
	RetryAfter      string
	ContentEncoding string
	// Body is the answer's body, uncompressed if it came gzipped; WireBytes is its size on the wire.
	Body      []byte
	WireBytes int64
}

// Header returns the response's headers as net/http would show the ones it keeps.
func (r *Response) Header() http.Header {
	h := http.Header{}
	if r.ContentType != "" {
		h.Set("Content-Type", r.ContentType)
	}
	if r.RetryAfter != "" {
		h.Set("Retry-After", r.RetryAfter)
	}
	return h
}

// op is how net/http names a method in a *url.Error: "Put", "Patch".
func op(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}
