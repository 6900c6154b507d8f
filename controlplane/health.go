package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// healthPollInterval paces the wait for a component to become healthy. A component that is not up
// yet has no event to offer but its port answering; 100 ms is small next to a 4 s start.
const healthPollInterval = 100 * time.Millisecond

// probeTimeout bounds one health request, so a wedged component cannot stall Up or Status.
const probeTimeout = 2 * time.Second

// DefaultStartTimeout is how long Up waits for each component to become healthy. The apiserver
// takes about 4 s on a quiet machine; a loaded CI runner can take many times that.
const DefaultStartTimeout = 90 * time.Second

// adminHTTPClient returns a client that trusts the control plane's CA and presents c's client
// certificate: it can read the apiserver's /readyz and /metrics and the controller manager's /metrics.
func adminHTTPClient(c credentials) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.caPEM) {
		return nil, fmt.Errorf("build HTTP client for %s: no certificate in the CA bundle", c.user)
	}
	pair, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("build HTTP client for %s: %w", c.user, err)
	}
	return &http.Client{
		Timeout: probeTimeout,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
			// Metrics scrapes and probes are periodic; keeping one connection spares a handshake
			// each time.
			MaxIdleConnsPerHost: 1,
		},
	}, nil
}

// probe GETs url and succeeds on 200. Its error carries the start of the body, which for /readyz
// names the checks that fail.
func probe(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, failingChecks(string(body)))
	}
	return nil
}

// failingChecks keeps the lines of a verbose health body that report a failing check ("[-]..."),
// or the whole body if it has none.
func failingChecks(body string) string {
	var failed []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, line)
		}
	}
	if len(failed) == 0 {
		return strings.TrimSpace(body)
	}
	return strings.Join(failed, "; ")
}

// errExited means a component exited while Up waited for it.
var errExited = errors.New("exited")

// waitHealthy polls url until it answers 200, p exits, ctx ends or timeout passes.
func waitHealthy(ctx context.Context, client *http.Client, url string, p *process, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(healthPollInterval) // the wall clock: a real process starts on it
	defer tick.Stop()
	var last error
	for {
		if last = probe(ctx, client, url); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%w (%v) before %s answered", errExited, p.err, url)
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w; last answer: %v", url, ctx.Err(), last)
		case <-tick.C:
		}
	}
}
