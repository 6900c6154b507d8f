package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// proxyFor is the proxy client-go would send a request to target through: the config's own
// (proxy-url in a kubeconfig), else HTTPS_PROXY and NO_PROXY as net/http reads them, NO_PROXY's
// CIDRs included (utilnet.NewProxierWithNoProxyCIDR, as client-go's transport). nil: none.
func proxyFor(proxy func(*http.Request) (*url.URL, error), target *url.URL) (*url.URL, error) {
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	u, err := utilnet.NewProxierWithNoProxyCIDR(proxy)(&http.Request{URL: target, Header: http.Header{}})
	if err != nil {
		return nil, fmt.Errorf("find the proxy to %s: %w", target.Redacted(), err)
	}
	if u != nil {
		if err := checkProxy(u); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// checkProxy refuses a proxy the wire path cannot go through, at the start rather than at its
// first dial.
func checkProxy(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("the wire path goes through http and https proxies (CONNECT) only, not %s (HTTPS_PROXY, or the kubeconfig's proxy-url)", u.Redacted())
	}
	if u.Hostname() == "" {
		return fmt.Errorf("the proxy %s has no host", u.Redacted())
	}
	return nil
}

// dialProxy opens a tunnel to addr through the proxy with CONNECT, as net/http's transport does
// for an https URL: TLS to the proxy itself if it is https, with the Client's TLS settings but
// for its name, and Basic credentials from its URL.
func (c *Client) dialProxy(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) (net.Conn, error) {
	p := c.cfg.Proxy
	proxyAddr := p.Host
	if p.Port() == "" {
		port := "80"
		if p.Scheme == "https" {
			port = "443"
		}
		proxyAddr = net.JoinHostPort(p.Hostname(), port)
	}
	nc, err := dial(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, fmt.Errorf("dial the proxy %s: %w", p.Redacted(), err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	} else {
		_ = nc.SetDeadline(time.Now().Add(dialTimeout)) // the net package's deadlines are wall time
	}
	if p.Scheme == "https" {
		t := c.tls.Clone()
		t.ServerName, t.NextProtos = p.Hostname(), nil
		tc := tls.Client(nc, t)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with the proxy %s: %w", p.Redacted(), err)
		}
		nc = tc
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: c.addr}, Host: c.addr, Header: http.Header{}}
	if u := p.User; u != nil {
		pass, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pass)))
	}
	if err := req.Write(nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("CONNECT %s through the proxy %s: %w", c.addr, p.Redacted(), err)
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("CONNECT %s through the proxy %s: %w", c.addr, p.Redacted(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		nc.Close()
		return nil, fmt.Errorf("the proxy %s refused CONNECT %s: %s", p.Redacted(), c.addr, resp.Status)
	}
	_ = nc.SetDeadline(time.Time{})
	if br.Buffered() > 0 { // the server's first bytes came with the proxy's answer
		return &bufferedConn{nc, br}, nil
	}
	return nc, nil
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }
