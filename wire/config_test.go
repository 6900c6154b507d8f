package wire

import (
	"net/url"
	"strings"
	"testing"
)

// TestBadConfigsAreRefusedClearly: New refuses what it cannot use, naming it.
func TestBadConfigsAreRefusedClearly(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Host: "http://127.0.0.1:6443"}, `HTTP/2 over TLS only, not to "http://127.0.0.1:6443"`},
		{Config{Host: "https://127.0.0.1:6443", FlushWindow: -1}, "flush window -1ns is not between 0 and 1ms"},
		{Config{Host: "https://127.0.0.1:6443", MaxConnections: -1}, "MaxConnections -1 is negative (0 is DefaultMaxConnections, 1000)"},
		{Config{Host: "https://127.0.0.1:6443", Proxy: &url.URL{Scheme: "socks5", Host: "127.0.0.1:1080"}}, "http and https proxies (CONNECT) only, not socks5://127.0.0.1:1080"},
		{Config{Host: "https://127.0.0.1:6443", Proxy: &url.URL{Scheme: "http"}}, "the proxy http: has no host"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
}
