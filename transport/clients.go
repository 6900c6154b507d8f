// Package transport carries the agents' requests to the apiserver: their client sets over a few
// shared connections or one per node, the lean Lease and status writers and the heartbeat sender over
// wire, and the agents' watches with their decoders (the wire watcher, and the legacy HTTP one).
// An agent sends through the agent.Clients it is given; the fleet builds them here, once for all
// its agents: agent -> transport -> wire.
package transport

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	storagev1client "k8s.io/client-go/kubernetes/typed/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/wire"
)

// UserAgent names fakelet the way a kubelet names itself.
var UserAgent = "kubelet/" + agent.KubeletVersion + " (linux/amd64) fakelet"

// Protobuf is the content type of the Kubernetes protobuf encoding.
const Protobuf = "application/vnd.kubernetes.protobuf"

// SharedClients returns n sets of agent clients, each over its own HTTP/2 connection: protobuf, no
// client-side rate limit (the kubelet's heartbeat client has QPS -1), the kubelet's 10 s timeout. If
// throttled is not nil, it counts the 429 answers they get, client-go's own retries of them included.
// Lease renewals and status patches go over a wire.Client of their own (one per set) when the
// server speaks TLS, and the agents' watches over another (wireWatcher), unless legacy: then over
// net/http (renewals, watches) and client-go (patches), as before the wire package, for comparison.
// counter counts their connections.
//
// path says which way, the wire connections' flush window and the clock; impersonate makes each
// request impersonate its agent (IdentityNode).
func SharedClients(base *rest.Config, n int, impersonate bool, throttled *atomic.Int64, path Path, counter *Counter) ([]agent.Clients, error) {
	out := make([]agent.Clients, n)
	for i := range out {
		cfg := agentConfig(base)
		var wc, watchWire *wire.Client
		if !path.Legacy {
			var err error
			if wc, err = wireClient(cfg, path, counter.dialer(connHeartbeat)); err != nil {
				return nil, fmt.Errorf("build heartbeat client %d: %w", i, err)
			}
			// The watches' own connections (wireWatcher says why), dialled at the first watch.
			if watchWire, err = wireClient(cfg, path, counter.dialer(connWatch)); err != nil {
				return nil, fmt.Errorf("build watch client %d: %w", i, err)
			}
		}
		if impersonate {
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return impersonateNode{rt} })
		}
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countWire{rt, throttled} })
		// The legacy path's renewals and watches go over these too.
		hc, err := sharedHTTPClient(cfg, counter.dialer(connClientGo))
		if err != nil {
			return nil, fmt.Errorf("build heartbeat client %d: %w", i, err)
		}
		if out[i], err = clientSet(cfg, hc, wc, watchWire, impersonate, throttled, path.Clock); err != nil {
			return nil, fmt.Errorf("build heartbeat client %d: %w", i, err)
		}
	}
	return out, nil
}

// PerNodeClients returns the agents' one set of clients over connections of each node's own
// (PerNode), everything included: the renewals and patches take the net/http way there,
// since a wire.Client holds a connection and two goroutines of its own. With creds, each node
// authenticates with its own client certificate; else with base's credential, impersonating the
// node if impersonate. clk is what their Retry-After waits are measured on (Path.Clock).
func PerNodeClients(base *rest.Config, impersonate bool, creds NodeCredentials, throttled *atomic.Int64, clk clock.WithDelayedExecution, counter *Counter) (agent.Clients, *PerNode, error) {
	cfg := agentConfig(base)
	router, err := newPerNode(cfg, creds, counter)
	if err != nil {
		return agent.Clients{}, nil, err
	}
	var rt http.RoundTripper = router
	switch {
	case creds != nil:
		rt = revokedNode{rt}
	case impersonate:
		rt = impersonateNode{rt}
	}
	hc := &http.Client{Transport: countWire{rt, throttled}, Timeout: cfg.Timeout}
	c, err := clientSet(cfg, hc, nil, nil, false, throttled, clk)
	if err != nil {
		return agent.Clients{}, nil, fmt.Errorf("build per-node clients: %w", err)
	}
	return c, router, nil
}

// agentConfig is base as the agents' clients send: protobuf, no client-side rate limit (the
// kubelet's heartbeat client has QPS -1), the kubelet's 10 s timeout and user agent.
func agentConfig(base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.ContentType = Protobuf
	cfg.AcceptContentTypes = Protobuf + ",application/json"
	cfg.QPS = -1
	cfg.Timeout = agent.RequestTimeout
	cfg.UserAgent = UserAgent
	return cfg
}

// clientSet is a set of agent clients over hc, and wc for the renewals and patches and watchWire for
// the watches if not nil; impersonate makes wc's and watchWire's requests impersonate their agent
// (hc's transport does it for its own); clk is what their Retry-After waits are measured on, nil the
// real clock.
func clientSet(cfg *rest.Config, hc *http.Client, wc, watchWire *wire.Client, impersonate bool, throttled *atomic.Int64, clk clock.WithDelayedExecution) (agent.Clients, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	core, err := corev1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return agent.Clients{}, err
	}
	coord, err := coordinationv1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return agent.Clients{}, err
	}
	u := coord.RESTClient().Put().URL()
	s := &heartbeatSender{http: hc, wire: wc, host: u.Scheme + "://" + u.Host, timeout: cfg.Timeout,
		header: []wire.Field{{Name: "accept", Value: cfg.AcceptContentTypes}, {Name: "user-agent", Value: cfg.UserAgent}, {Name: "content-type", Value: Protobuf}},
		node:   impersonate, throttled: throttled, clock: clk}
	if u.RawQuery != "" {
		s.query = "?" + u.RawQuery
	}
	var watches agent.Watcher
	if watchWire != nil {
		watches, err = newWireWatcher(watchWire, cfg, impersonate, throttled, clk)
	} else {
		watches, err = newHTTPWatcher(hc, cfg, clk)
	}
	if err != nil {
		return agent.Clients{}, err
	}
	// The kubelet's main and event clients (agent.Clients.Main) go over the same connections without
	// the heartbeat client's timeout.
	mainHC := &http.Client{Transport: hc.Transport}
	main, err := corev1client.NewForConfigAndClient(cfg, mainHC)
	if err != nil {
		return agent.Clients{}, err
	}
	storage, err := storagev1client.NewForConfigAndClient(cfg, mainHC)
	if err != nil {
		return agent.Clients{}, err
	}
	c := agent.Clients{Core: core, Coordination: leanCoordination{coord, newLeaseWriter(s, coord)}, Main: main, Storage: storage, Watches: watches}
	if wc != nil {
		c.Core = newLeanCore(s, core)
	}
	return c, nil
}

// Path is how heartbeat requests reach the apiserver.
type Path struct {
	// Legacy sends the renewals and watches over net/http and the patches through client-go, as
	// before the wire package (fleet.Config.LegacyWire).
	Legacy bool
	// FlushWindow is each wire connection's flush window (wire.Config.FlushWindow): 0 is
	// MaxFlushWindow, negative none (fleet.Config.FlushWindow).
	FlushWindow time.Duration
	// Clock is what the Retry-After waits and the wire connections' health checks, credential
	// refresh and flush window are measured on (wire.Config.Clock): the fleet's (fleet.Config.Clock);
	// nil: the real clock. On a fake clock, a flush window holds each write until the clock moves.
	Clock clock.WithDelayedExecution
}

// MaxFlushWindow bounds Path.FlushWindow. It is the wire's bound, named here so that the fleet checks
// its configuration against it without importing the wire.
const MaxFlushWindow = wire.MaxFlushWindow

// CloseWire closes the wire.Clients of heartbeat clients, the watches' too: their connections'
// goroutines end with the run.
func CloseWire(clients []agent.Clients) {
	for _, c := range clients {
		if lean, ok := c.Coordination.(leanCoordination); ok && lean.w.s.wire != nil {
			lean.w.s.wire.Close()
		}
		if w, ok := c.Watches.(*wireWatcher); ok {
			w.client.Close()
		}
	}
}

// wireClient is the wire.Client of cfg, or nil if the wire package cannot reach its server (plain
// HTTP): then everything goes the legacy way. A proxy, the config's or HTTPS_PROXY's, it goes
// through as client-go does (wire.ForConfig), or refuses by name.
func wireClient(cfg *rest.Config, path Path, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*wire.Client, error) {
	if u, _, err := rest.DefaultServerUrlFor(cfg); err != nil || u.Scheme != "https" {
		return nil, nil
	}
	wc, err := wire.ForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if wc.Dial == nil {
		wc.Dial = dial // counted; a dialer of the config's own is left as it is
	}
	wc.FlushWindow = max(0, path.FlushWindow)
	if path.FlushWindow == 0 {
		wc.FlushWindow = MaxFlushWindow
	}
	wc.Clock = path.Clock
	return wire.New(wc)
}

// impersonateNode sets the impersonation headers of the agent that makes the request, read from its
// context. One shared transport serves every node this way.
type impersonateNode struct{ next http.RoundTripper }

func (rt impersonateNode) RoundTrip(req *http.Request) (*http.Response, error) {
	user, groups, ok := agent.IdentityFrom(req.Context())
	if !ok {
		return rt.next.RoundTrip(req)
	}
	// A RoundTripper must not change its request: copy it, but only the header map is written to
	// (req.Clone would deep-copy the URL and more on every heartbeat).
	shallow := *req
	shallow.Header = req.Header.Clone()
	req = &shallow
	req.Header.Set(transport.ImpersonateUserHeader, user)
	req.Header.Del(transport.ImpersonateGroupHeader)
	for _, g := range groups {
		req.Header.Add(transport.ImpersonateGroupHeader, g)
	}
	return rt.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go unwrap the chain.
func (rt impersonateNode) WrappedRoundTripper() http.RoundTripper { return rt.next }

// countWire counts what the wire carries: the body bytes of agents' requests and responses, into the
// agent.Meter of the request's context, and 429 Too Many Requests answers. client-go retries those
// itself after the Retry-After the apiserver sends (API Priority and Fairness rejections carry one),
// as the kubelet's client does, so most never reach an agent as an error: only here are they all seen.
type countWire struct {
	next      http.RoundTripper
	throttled *atomic.Int64 // nil counts no 429s
}

func (rt countWire) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if m := agent.MeterFrom(req.Context()); m != nil {
		m.Exchange(req, resp)
	}
	if err == nil && resp.StatusCode == http.StatusTooManyRequests && rt.throttled != nil {
		rt.throttled.Add(1)
	}
	return resp, err
}

// WrappedRoundTripper lets client-go unwrap the chain.
func (rt countWire) WrappedRoundTripper() http.RoundTripper { return rt.next }
