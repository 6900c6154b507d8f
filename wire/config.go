package wire

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Config is what a Client needs to reach one apiserver.
type Config struct {
	// Host is the server's URL, https://host[:port]; requests' paths are absolute (any prefix of
	// the server's is the caller's).
	Host string
	// TLS is used as given but for ALPN (h2) and, if empty, ServerName.
	TLS *tls.Config
	// Dial opens the TCP connection; nil uses a net.Dialer as net/http's default transport does.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Proxy, if set, is the http or https proxy to reach Host through, with CONNECT (ForConfig:
	// the rest.Config's, else HTTPS_PROXY's, as client-go's); Dial then dials the proxy.
	Proxy *url.URL
	// Auth returns the headers that authenticate a request (Authorization, a config's
	// Impersonate-*), called again at most every AuthRefresh; nil sends none.
	Auth func() ([]Field, error)
	// Refresh renews the credentials when the server answers 401 and returns the new ones (an
	// exec plugin run again, a token file read again); nil: a 401 is the answer.
	Refresh func() ([]Field, error)
	// StreamWindow is the receive window of each stream: how much of an answer or a watch the server
	// may send before the reader has handed it on. 0: 1 MiB.
	StreamWindow uint32
	// FlushWindow is how long the writer may hold written frames for more to come before it flushes
	// them with one write: 0 flushes as soon as its queue is empty, and so does any window for frames
	// that came with nothing else taken in the window before them. At most MaxFlushWindow.
	FlushWindow time.Duration
	// ReadIdleTimeout is how long a connection may read nothing before it sends a PING, and
	// PingTimeout how long it then waits for the answer before it fails its requests and closes: a
	// server gone without a word (a partition, a stopped process) would otherwise hold every
	// request to its timeout, forever. 0: client-go's 30 s and 15 s.
	ReadIdleTimeout, PingTimeout time.Duration
	// MaxConnections bounds the connections the Client holds at once: past it, a request that
	// finds every connection's streams taken waits for one to end (or its context's). 0:
	// DefaultMaxConnections.
	MaxConnections int
	// DisableCompression leaves out Accept-Encoding: gzip, which net/http's transport (so client-go)
	// sends by default.
	DisableCompression bool
	// Clock is what the connections' health checks, the credentials' refresh, the retries' backoff
	// and the writers' flush window are measured on (the fleet's, so that a fake one steps them all);
	// nil: the real clock.
	Clock clock.WithDelayedExecution

	// observe lets a test learn, from the writer itself, when it holds frames on its timer and when
	// it flushes them: the moments at which stepping a fake Clock means something.
	observe func(writerEvent)
	// handshakeTimeout is tlsHandshakeTimeout but in a test that would not wait as long.
	handshakeTimeout time.Duration
}

// DefaultMaxConnections is the connections a Client may hold: at kube-apiserver's 100 streams a
// connection, 100,000 streams, about 16 times the 60 connections a set of 1000 nodes' watches
// needs, and a bound on what a server that takes no streams, or few, can make a Client dial.
const DefaultMaxConnections = 1000

// MaxFlushWindow bounds how late a request may leave for the sake of sharing a write with others.
const MaxFlushWindow = time.Millisecond

// AuthRefresh is how often a Client reads its credentials again: token files and exec plugins rotate.
const AuthRefresh = time.Minute

const defaultStreamWindow = 1 << 20

// client-go's health check of its HTTP/2 connections (k8s.io/apimachinery/pkg/util/net).
const (
	defaultReadIdleTimeout = 30 * time.Second
	defaultPingTimeout     = 15 * time.Second
)

func (c Config) validate() error {
	if !strings.HasPrefix(c.Host, "https://") {
		return fmt.Errorf("the wire path speaks HTTP/2 over TLS only, not to %q", c.Host)
	}
	if c.Proxy != nil {
		if err := checkProxy(c.Proxy); err != nil {
			return err
		}
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("MaxConnections %d is negative (0 is DefaultMaxConnections, %d)", c.MaxConnections, DefaultMaxConnections)
	}
	if c.FlushWindow < 0 || c.FlushWindow > MaxFlushWindow {
		return fmt.Errorf("flush window %v is not between 0 and %v", c.FlushWindow, MaxFlushWindow)
	}
	return nil
}

// ForConfig returns the Config of cfg: its host, its TLS settings (rest.TLSConfigFor: CA, client
// certificates, server name, insecure), its dialer, its proxy (proxyFor), and its credentials as client-go would send
// them (bearer token or token file, basic auth, exec and auth-provider plugins, the config's own
// impersonation), read through client-go's own round trippers so that every kind it supports works,
// and renewed through them after a 401.
// cfg's WrapTransport runs in that probe too: give a config without wrappers that count or log.
func ForConfig(cfg *rest.Config) (Config, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return Config{}, err
	}
	if u.Scheme != "https" {
		return Config{}, fmt.Errorf("the wire path speaks HTTP/2 over TLS only, not to %s", u.Redacted())
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return Config{}, err
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return Config{}, err
	}
	tc.UserAgent = "" // the caller's requests carry their own
	probe, err := newAuthProbe(tc, u.Scheme+"://"+u.Host)
	if err != nil {
		return Config{}, err
	}
	proxy, err := proxyFor(cfg.Proxy, u)
	if err != nil {
		return Config{}, err
	}
	return Config{Host: u.Scheme + "://" + u.Host, TLS: tlsConfig, Dial: cfg.Dial, Proxy: proxy, Auth: probe.headers, Refresh: probe.refresh}, nil
}
