package wire

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/internal/h2script"
)

// connectProxy is an HTTP proxy on the loopback that takes CONNECT only and tunnels every one to
// target, whatever it names: the client can name a host it cannot resolve itself.
type connectProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	asked   []string // each CONNECT's target and Proxy-Authorization
	tunnels sync.WaitGroup
}

func newConnectProxy(t *testing.T, target string) *connectProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{ln: ln}
	p.tunnels.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			p.tunnels.Go(func() { p.serve(nc, target) })
		}
	})
	t.Cleanup(func() { ln.Close(); p.tunnels.Wait() })
	return p
}

func (p *connectProxy) serve(nc net.Conn, target string) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.asked = append(p.asked, req.Method+" "+req.Host+" "+req.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(nc, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		_, _ = io.WriteString(nc, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer up.Close()
	_, _ = io.WriteString(nc, "HTTP/1.1 200 Connection established\r\n\r\n")
	done := make(chan struct{})
	go func() { _, _ = io.Copy(up, br); up.(*net.TCPConn).CloseWrite(); close(done) }()
	_, _ = io.Copy(nc, up)
	nc.Close()
	<-done
}

func (p *connectProxy) URL(user string) *url.URL {
	u := &url.URL{Scheme: "http", Host: p.ln.Addr().String()}
	if user != "" {
		u.User = url.UserPassword(user, "secret")
	}
	return u
}

// TestRequestsGoThroughTheConfigsProxy: a rest.Config with a proxy (a kubeconfig's proxy-url, or
// HTTPS_PROXY, which client-go reads the same way when the config names none) reaches its
// apiserver through the proxy's CONNECT tunnel, the proxy's credentials sent, and the apiserver's
// certificate checked against the apiserver's name, not the proxy's.
func TestRequestsGoThroughTheConfigsProxy(t *testing.T) {
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			rc.Respond(r.StreamID, 200, "text/plain", []byte(r.Get(":authority")))
		}
	})
	proxy := newConnectProxy(t, strings.TrimPrefix(srv.URL(), "https://"))
	// example.com: a name the test's certificate holds, which only the proxy "resolves".
	cfg, err := ForConfig(&rest.Config{Host: "https://example.com", TLSClientConfig: rest.TLSClientConfig{CAData: srv.CA()},
		Proxy: http.ProxyURL(proxy.URL("fleet"))})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Do(context.Background(), &Request{Path: "/x"})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != "example.com" {
		t.Errorf("the server saw authority %q", resp.Body)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if want := "CONNECT example.com:443 Basic ZmxlZXQ6c2VjcmV0"; len(proxy.asked) != 1 || proxy.asked[0] != want {
		t.Errorf("the proxy was asked %q, want [%q]", proxy.asked, want)
	}
}

// TestProxiesTheWirePathCannotUseAreRefused: a SOCKS proxy is refused when the Config is made,
// naming it, not at the first dial.
func TestProxiesTheWirePathCannotUseAreRefused(t *testing.T) {
	_, err := ForConfig(&rest.Config{Host: "https://example.com", Proxy: http.ProxyURL(&url.URL{Scheme: "socks5", Host: "127.0.0.1:1080"})})
	if err == nil || !strings.Contains(err.Error(), "http and https proxies (CONNECT) only, not socks5://127.0.0.1:1080") {
		t.Fatalf("got %v, want the socks5 proxy refused by name", err)
	}
}

// childCA, set, makes TestRequestsGoThroughHTTPSProxy the child process that sends the request:
// net/http reads HTTPS_PROXY once a process, so the variable is set for a process of its own.
const childCA = "WIRE_TEST_PROXY_CHILD_CA"

// TestRequestsGoThroughHTTPSProxy: with HTTPS_PROXY set and a kubeconfig naming no proxy, the wire
// path goes through the proxy, as client-go does; it dialled the apiserver directly before.
func TestRequestsGoThroughHTTPSProxy(t *testing.T) {
	if ca := os.Getenv(childCA); ca != "" {
		cfg, err := ForConfig(&rest.Config{Host: "https://example.com", TLSClientConfig: rest.TLSClientConfig{CAData: []byte(ca)}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Do(context.Background(), &Request{Path: "/x"}); err != nil {
			t.Fatal(err)
		}
		return
	}
	srv := h2script.New(t, nil, answerAll)
	proxy := newConnectProxy(t, strings.TrimPrefix(srv.URL(), "https://"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestRequestsGoThroughHTTPSProxy$", "-test.count=1")
	cmd.Env = append(os.Environ(), childCA+"="+string(srv.CA()), "HTTPS_PROXY="+proxy.URL("").String(), "NO_PROXY=", "no_proxy=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the request with HTTPS_PROXY set: %v\n%s", err, out)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if want := "CONNECT example.com:443 "; len(proxy.asked) != 1 || proxy.asked[0] != want {
		t.Errorf("the proxy was asked %q, want [%q]", proxy.asked, want)
	}
}
