package wire

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"fakelet.dev/fakelet/internal/h2script"
)

// scriptedClient returns a Client of a scripted server that trusts its certificate.
func scriptedClient(t *testing.T, s *h2script.Server, cfg Config) *Client {
	t.Helper()
	cfg.Host = s.URL()
	cfg.TLS = &tls.Config{RootCAs: s.Roots()}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// answerAll answers every request of rc 200, with no body, until the connection ends.
func answerAll(rc *h2script.Conn) {
	for {
		r, ok := rc.Request()
		if !ok {
			return
		}
		rc.Respond(r.StreamID, 200, "text/plain", nil)
	}
}

// echo is a handler of Go's own HTTP/2 server: it answers with the request's method, path and body
// size, or, for GET /big?n=N, N bytes of a known pattern.
func echo(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/big" {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(pattern(n))
		return
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+strconv.Itoa(len(body))+" "+r.Header.Get("Authorization")+" "+r.Header.Get("Impersonate-User"))
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

// goServer serves echo with Go's own HTTP/2 server over TLS.
func goServer(t *testing.T) *httptest.Server { return goServerTB(t) }

func goServerTB(t testing.TB) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts
}

func goClient(t testing.TB, ts *httptest.Server, cfg Config) *Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	cfg.Host = ts.URL
	if cfg.TLS == nil {
		cfg.TLS = &tls.Config{RootCAs: roots}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func strconvItoa(i int) string { return strconv.Itoa(i) }

func certPEM(ts *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
}
