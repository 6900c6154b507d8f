// Package h2script is a scripted HTTP/2 server over TLS for tests: a script writes the frames of its
// answers itself, for what Go's own server does not let a test choose (where DATA frames are cut,
// GOAWAY or RST_STREAM at a given moment, a PING, a dropped or silent connection, a low
// SETTINGS_MAX_CONCURRENT_STREAMS). It is built on x/net's Framer and hpack, as the wire package is.
package h2script

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http/httptest"
	"sync"
	"testing"

	"golang.org/x/net/http2"
)

// Server hands each connection it accepts, once the client's preface is read and the server's
// SETTINGS are written, to its script.
type Server struct {
	ln    net.Listener
	roots *x509.CertPool
	ca    []byte
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns int
}

// New starts a Server on the loopback that announces settings and runs serve, in a goroutine of its
// own, for each connection; the connection closes when serve returns. The test's cleanup stops the
// server and waits for every script to return.
func New(t testing.TB, settings []http2.Setting, serve func(*Conn)) *Server {
	t.Helper()
	// httptest's certificate is valid for 127.0.0.1; the server it came with is only its carrier.
	certs := httptest.NewUnstartedServer(nil)
	certs.StartTLS()
	cert, leaf := certs.TLS.Certificates[0], certs.Certificate()
	certs.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, roots: x509.NewCertPool(), ca: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})}
	s.roots.AddCert(leaf)
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
				c := newConn(t, nc)
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(nc, preface); err != nil {
					return
				}
				if err := c.fr.WriteSettings(settings...); err != nil {
					return
				}
				serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// Accepted is the number of connections the server has accepted so far.
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// URL is the server's https://host:port.
func (s *Server) URL() string { return "https://" + s.ln.Addr().String() }

// Roots trusts the server's certificate.
func (s *Server) Roots() *x509.CertPool { return s.roots }

// CA is the server's certificate in PEM, as a kubeconfig's certificate-authority-data holds it.
func (s *Server) CA() []byte { return s.ca }
