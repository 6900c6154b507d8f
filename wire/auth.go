package wire

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/transport"
)

// authProbe reads the credentials client-go would add to a request: it sends a request through
// client-go's own wrappers for the config down to itself, and keeps the headers they set. One probe
// a minute costs nothing next to a wrapper chain on every request. After a 401 it makes the
// chain renew them (refresh).
type authProbe struct {
	mu           sync.Mutex
	rt           http.RoundTripper
	url          string
	fields       []Field // set by the end of the chain
	unauthorized bool    // the end of the chain answers 401
}

func newAuthProbe(tc *transport.Config, url string) (*authProbe, error) {
	p := &authProbe{url: url + "/"}
	rt, err := transport.HTTPWrappersForConfig(tc, capture{p})
	if err != nil {
		return nil, err
	}
	p.rt = rt
	return p, nil
}

// headers returns the credential headers a request would carry now.
func (p *authProbe) headers() ([]Field, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.probe()
}

// refresh tells the chain that the server refused its credentials, as a 401 through client-go's
// own transport does: an exec plugin runs again (exec.Authenticator.maybeRefreshCreds), a token
// file or an auth provider's token source forgets its token (tokenSourceTransport); it returns
// the credentials a request would carry after that.
func (p *authProbe) refresh() ([]Field, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unauthorized = true
	_, err := p.probe()
	p.unauthorized = false
	if err != nil {
		return nil, err
	}
	return p.probe()
}

func (p *authProbe) probe() ([]Field, error) {
	req, err := http.NewRequest(http.MethodGet, p.url, nil)
	if err != nil {
		return nil, err
	}
	p.fields = nil
	resp, err := p.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return p.fields, nil
}

// capture ends the probe's chain: it answers 200 and keeps the credential headers it was sent.
type capture struct{ p *authProbe }

func (c capture) RoundTrip(req *http.Request) (*http.Response, error) {
	var fields []Field
	for name, values := range req.Header {
		lower := strings.ToLower(name)
		if lower != "authorization" && !strings.HasPrefix(lower, "impersonate-") {
			continue
		}
		for _, v := range values {
			fields = append(fields, Field{Name: lower, Value: v})
		}
	}
	slices.SortStableFunc(fields, func(a, b Field) int { return strings.Compare(a.Name, b.Name) })
	c.p.fields = fields
	status := http.StatusOK
	if c.p.unauthorized {
		status = http.StatusUnauthorized
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// reauth renews the credentials after the server answered 401 to a request sent while the
// credentials' generation was gen, once for all the requests refused together: every writer then
// reads them again before its next request. It reports whether the request should go again, with
// them: false if they could not be renewed.
func (c *Client) reauth(gen uint64) bool {
	if c.cfg.Refresh == nil {
		return false
	}
	c.reauthMu.Lock()
	defer c.reauthMu.Unlock()
	if c.authGen.Load() != gen {
		return true // renewed since that request went
	}
	if _, err := c.cfg.Refresh(); err != nil {
		return false // the 401 stands, as client-go's exec transport logs and returns it
	}
	c.authGen.Add(1)
	return true
}
