package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// h2Transport is cfg's transport over x/net's http2.Transport, whose connections dial counts, with
// client-go's wrappers (credentials, impersonation, cfg's WrapTransport). x/net's pool dials one
// connection at a time for requests that find every connection full, and each dial serves all the
// requests that waited for it; net/http's Transport, which client-go builds, dials once for every
// such request and keeps the first that answers: at a fleet's start, when hundreds of kubelets send
// their registration requests together over a set's one connection, that is a handshake per request.
func h2Transport(cfg *rest.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (http.RoundTripper, error) {
	tc, err := cfg.TransportConfig()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := transport.TLSConfigFor(tc)
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	h2 := &http2.Transport{
		TLSClientConfig: tlsConfig,
		DialTLSContext: func(ctx context.Context, network, addr string, c *tls.Config) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tlsConn := tls.Client(conn, c)
			if err := tlsConn.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tlsConn, nil
		},
		// client-go's health check of its HTTP/2 connections (k8s.io/apimachinery/pkg/util/net).
		ReadIdleTimeout: 30 * time.Second,
		PingTimeout:     15 * time.Second,
	}
	return transport.HTTPWrappersForConfig(tc, h2)
}

// sharedHTTPClient is the client-go client of a set of agents' clients: over h2Transport when the
// server speaks TLS without a proxy, else client-go's own (cfg's Dial set to dial).
func sharedHTTPClient(cfg *rest.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*http.Client, error) {
	if u, _, err := rest.DefaultServerUrlFor(cfg); err != nil || u.Scheme != "https" || cfg.Proxy != nil {
		cfg.Dial = dial
		return rest.HTTPClientFor(cfg)
	}
	rt, err := h2Transport(cfg, dial)
	if err != nil {
		return nil, fmt.Errorf("the agents' HTTP/2 transport: %w", err)
	}
	return &http.Client{Transport: rt, Timeout: cfg.Timeout}, nil
}
