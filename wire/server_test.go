package wire

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawServer is a scripted HTTP/2 server over TLS: each accepted connection is handed, preface and
// SETTINGS exchanged, to the test's function, which reads and writes frames itself.
type rawServer struct {
	ln    net.Listener
	roots *x509.CertPool
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns int
}

func newRawServer(t *testing.T, settings []http2.Setting, serve func(*rawConn)) *rawServer {
	t.Helper()
	certs := httptest.NewUnstartedServer(nil)
	certs.StartTLS()
	cert, roots := certs.TLS.Certificates[0], x509.NewCertPool()
	roots.AddCert(certs.Certificate())
	certs.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, roots: roots}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				rc := &rawConn{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
				rc.dec = hpack.NewDecoder(4096, nil)
				rc.enc = hpack.NewEncoder(&rc.hbuf)
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(nc, preface); err != nil {
					return
				}
				if err := rc.fr.WriteSettings(settings...); err != nil {
					return
				}
				serve(rc)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// client returns a Client of the server that trusts its certificate.
func (s *rawServer) client(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.Host = "https://" + s.ln.Addr().String()
	cfg.TLS = &tls.Config{RootCAs: s.roots}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// rawConn is the server's side of one connection.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	fr   *http2.Framer
	dec  *hpack.Decoder
	enc  *hpack.Encoder
	hbuf bytes.Buffer
}

// request is what the server read of one request.
type request struct {
	id     uint32
	header map[string][]string
	body   []byte
}

// next reads frames, answering SETTINGS and skipping what is not a request, until a request is
// complete; it returns false when the connection ends.
func (rc *rawConn) next() (request, bool) {
	reqs := map[uint32]*request{}
	for {
		f, err := rc.fr.ReadFrame()
		if err != nil {
			return request{}, false
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = rc.fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			fields, err := rc.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				rc.t.Errorf("decode headers: %v", err)
				return request{}, false
			}
			r := &request{id: f.StreamID, header: map[string][]string{}}
			for _, hf := range fields {
				r.header[hf.Name] = append(r.header[hf.Name], hf.Value)
			}
			if f.StreamEnded() {
				return *r, true
			}
			reqs[f.StreamID] = r
		case *http2.DataFrame:
			r := reqs[f.StreamID]
			r.body = append(r.body, f.Data()...)
			if len(f.Data()) > 0 {
				_ = rc.fr.WriteWindowUpdate(0, uint32(len(f.Data())))
				_ = rc.fr.WriteWindowUpdate(f.StreamID, uint32(len(f.Data())))
			}
			if f.StreamEnded() {
				delete(reqs, f.StreamID)
				return *r, true
			}
		}
	}
}

// respond answers stream id with status and body.
func (rc *rawConn) respond(id uint32, status int, body []byte) {
	rc.hbuf.Reset()
	_ = rc.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	_ = rc.enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "text/plain"})
	_ = rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.hbuf.Bytes(), EndHeaders: true, EndStream: len(body) == 0})
	if len(body) > 0 {
		_ = rc.fr.WriteData(id, true, body)
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
