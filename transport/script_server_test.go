package transport

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// answer is one scripted response of the test server.
type answer struct {
	code       int
	header     http.Header
	body       []byte
	retryAfter string
	action     string // "": answer; "reset": reset the stream; "drop": close the connection; "hang": never answer
}

type connKey struct{}

// onWire is what the server saw of one request.
type onWire struct {
	method, url, proto string
	header             http.Header
	body               []byte
}

// scriptServer answers each request with the next answer of its script, repeating the last.
type scriptServer struct {
	mu     sync.Mutex
	script []answer
	seen   []onWire
}

func (s *scriptServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, onWire{r.Method, r.URL.String(), r.Proto, r.Header.Clone(), body})
	a := s.script[min(len(s.seen), len(s.script))-1]
	s.mu.Unlock()
	switch a.action {
	case "reset":
		panic(http.ErrAbortHandler) // Go's server resets the stream
	case "drop":
		_ = r.Context().Value(connKey{}).(net.Conn).Close()
		return
	case "hang":
		<-r.Context().Done()
		return
	}
	for k, v := range a.header {
		w.Header()[k] = v
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.code)
	_, _ = w.Write(a.body)
}

func (s *scriptServer) play(script ...answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.seen = script, nil
}

func (s *scriptServer) requests() []onWire {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// serveTLS serves h over TLS and HTTP/2, as the apiserver does, with each request's connection in
// its context for the drops a script asks for.
func serveTLS(tb testing.TB, h http.Handler) *httptest.Server {
	tb.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the resets and drops the tests ask for
	ts.EnableHTTP2 = true
	ts.StartTLS()
	tb.Cleanup(ts.Close)
	return ts
}

// certOf is the server's certificate in PEM, for a rest.Config's CAData.
func certOf(s *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}
