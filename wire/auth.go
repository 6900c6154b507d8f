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
// a minute costs nothing next to a wrapper chain on every request.
type authProbe struct {
	mu     sync.Mutex
	rt     http.RoundTripper
	url    string
	fields []Field // set by the end of the chain
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
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}
