package transport

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"fakelet.dev/fakelet/agent"
)

// PerNode sends each agent's requests over a transport of the agent's node alone, so over
// connections of its own: one client-go clientset, one watcher and one heartbeat sender serve the
// whole fleet, and only this router's entries grow with it. A node's transport is made on its
// first request, as a kubelet dials when it starts, so nodes added later get theirs too.
type PerNode struct {
	base    *rest.Config    // the nodes' configuration, without wrappers; its credential unless creds
	creds   NodeCredentials // nil: the base credential, impersonating each node above this router
	counter *Counter

	mu     sync.Mutex
	nodes  map[string]*nodeTransport // by node name
	shared *nodeTransport            // a request that is no agent's
}

type nodeTransport struct {
	once sync.Once
	rt   http.RoundTripper
	err  error
}

func newPerNode(base *rest.Config, creds NodeCredentials, counter *Counter) (*PerNode, error) {
	base = rest.CopyConfig(base)
	// A certificate file would start a goroutine per transport that watches it for rotation: read
	// it once into the configuration instead.
	if err := rest.LoadTLSFiles(base); err != nil {
		return nil, fmt.Errorf("per-node connections: read TLS files: %w", err)
	}
	base.CAFile, base.CertFile, base.KeyFile = "", "", ""
	return &PerNode{base: base, creds: creds, counter: counter, nodes: map[string]*nodeTransport{}, shared: &nodeTransport{}}, nil
}

func (p *PerNode) RoundTrip(req *http.Request) (*http.Response, error) {
	node := ""
	if user, _, ok := agent.IdentityFrom(req.Context()); ok {
		node = strings.TrimPrefix(user, agent.NodeUserPrefix)
	}
	rt, err := p.transport(node)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return rt.RoundTrip(req)
}

// transport is node's own transport, made on first use; "" is the one for requests of no agent.
func (p *PerNode) transport(node string) (http.RoundTripper, error) {
	p.mu.Lock()
	nt := p.shared
	if node != "" {
		if nt = p.nodes[node]; nt == nil {
			nt = &nodeTransport{}
			p.nodes[node] = nt
		}
	}
	p.mu.Unlock()
	nt.once.Do(func() { nt.rt, nt.err = p.newTransport(node) })
	return nt.rt, nt.err
}

// newTransport is node's own HTTP/2 transport. x/net's http2.Transport dials once for requests
// that arrive together, where net/http's would dial for each and keep one: a node starts its
// requests at once (registration, watches) and must still make one handshake.
func (p *PerNode) newTransport(node string) (http.RoundTripper, error) {
	cfg := rest.CopyConfig(p.base)
	if p.creds != nil && node != "" {
		cert, key, err := p.creds(node)
		if err != nil {
			return nil, fmt.Errorf("client certificate of node %s: %w", node, err)
		}
		// The node's certificate is its whole credential: nothing of the fleet's goes with it.
		cfg.CertData, cfg.KeyData = cert, key
		cfg.BearerToken, cfg.BearerTokenFile, cfg.Username, cfg.Password = "", "", "", ""
		cfg.ExecProvider, cfg.AuthProvider, cfg.Impersonate = nil, nil, rest.ImpersonationConfig{}
	}
	rt, err := h2Transport(cfg, p.counter.dialer(connClientGo))
	if err != nil {
		return nil, fmt.Errorf("transport of node %q: %w", node, err)
	}
	return rt, nil
}

// close closes the connections of every node's transport.
func (p *PerNode) Close() {
	p.mu.Lock()
	all := append(make([]*nodeTransport, 0, len(p.nodes)+1), p.shared)
	for _, nt := range p.nodes {
		all = append(all, nt)
	}
	p.mu.Unlock()
	for _, nt := range all {
		nt.once.Do(func() {}) // one never used stays so
		if nt.rt != nil {
			utilnet.CloseIdleConnectionsFor(nt.rt)
		}
	}
}

// revokedNode makes the requests of an agent whose credential is revoked (agent.Agent.SetAuthDenied)
// fail as such a kubelet's do, where its identity is a certificate no header can take away: it asks
// to impersonate the node's user without its group, which a node's credential may not (403).
type revokedNode struct{ next http.RoundTripper }

func (rt revokedNode) RoundTrip(req *http.Request) (*http.Response, error) {
	user, groups, ok := agent.IdentityFrom(req.Context())
	if !ok || len(groups) > 0 {
		return rt.next.RoundTrip(req)
	}
	shallow := *req
	shallow.Header = req.Header.Clone()
	shallow.Header.Set(transport.ImpersonateUserHeader, user)
	return rt.next.RoundTrip(&shallow)
}

// WrappedRoundTripper lets client-go unwrap the chain.
func (rt revokedNode) WrappedRoundTripper() http.RoundTripper { return rt.next }
