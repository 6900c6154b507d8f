package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"fakelet.dev/fakelet/agent"
)

// connServer is an HTTP/2 TLS server that asks for client certificates and records, for each
// connection, the identities its requests came as.
type connServer struct {
	*httptest.Server
	mu         sync.Mutex
	handshakes int
	byConn     map[string]map[string]bool // remote address: identities
	requests   []seenRequest
}

type seenRequest struct {
	conn, cn, impersonated, authorization, path string
}

func newConnServer(t *testing.T) *connServer {
	s := &connServer{byConn: map[string]map[string]bool{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := seenRequest{conn: r.RemoteAddr, impersonated: r.Header.Get(transport.ImpersonateUserHeader),
			authorization: r.Header.Get("Authorization"), path: r.URL.Path}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			seen.cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		s.mu.Lock()
		s.requests = append(s.requests, seen)
		if s.byConn[seen.conn] == nil {
			s.byConn[seen.conn] = map[string]bool{}
		}
		s.byConn[seen.conn][seen.cn+seen.impersonated] = true
		s.mu.Unlock()
		if r.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", Protobuf+";stream=watch")
			w.WriteHeader(http.StatusOK) // and the stream ends at once, as at its timeout
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}))
	s.EnableHTTP2 = true
	s.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.handshakes++
			s.mu.Unlock()
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// restConfig is a configuration trusting the server, with a bearer token as the fleet's credential.
func (s *connServer) restConfig() *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return &rest.Config{Host: s.URL, BearerToken: "fleet-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// selfSigned issues each node a self-signed certificate for system:node:<node>: the server asks for
// one and does not verify it.
func selfSigned(node string) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: agent.NodeUserPrefix + node, Organization: []string{agent.NodesGroup}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

type endedStream struct{ ended chan error }

func (s endedStream) Opened(err error) {
	if err != nil {
		s.ended <- err
	}
}
func (s endedStream) Event(agent.WatchEvent) {}
func (s endedStream) Ended(err error)        { s.ended <- err }

// sendAsNodes sends, as each node, what an agent sends most: a Node GET through client-go, a Lease
// PUT through the lease writer, and a watch, several times over, from several goroutines at once.
func sendAsNodes(t *testing.T, c agent.Clients, nodes []string) {
	t.Helper()
	// The first request alone, as a kubelet's registration: net/http, under the shared connections,
	// dials for each request that finds no connection and keeps one.
	first, _ := agent.RequestContext(context.Background(), nodes[0])
	_, _ = c.Core.Nodes().Get(first, nodes[0], metav1.GetOptions{})
	var wg sync.WaitGroup
	for _, node := range nodes {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, _ := agent.RequestContext(context.Background(), node)
				_, _ = c.Core.Nodes().Get(ctx, node, metav1.GetOptions{})
				lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease", ResourceVersion: "1"}}
				_, _ = c.Coordination.Leases("kube-node-lease").Update(ctx, lease, metav1.UpdateOptions{})
				s := endedStream{ended: make(chan error, 1)}
				c.Watches.Watch(ctx, agent.WatchRequest{Resource: "nodes", Path: "/api/v1/nodes", Query: url.Values{"watch": {"true"}}}, s)
				if err := <-s.ended; err != nil {
					t.Errorf("watch as %s: %v", node, err)
				}
			}()
		}
	}
	wg.Wait()
}

// TestPerNodeConnectionsCarryOneNodeEach: with per-node connections every node's requests of every
// kind (client-go, lease writer, watch) go over one connection of its own, one handshake each, as
// its own client certificate or impersonating it with the fleet's credential; shared connections
// carry every node over one.
func TestPerNodeConnectionsCarryOneNodeEach(t *testing.T) {
	nodes := []string{"fakelet-00000", "fakelet-00001", "fakelet-00002", "fakelet-00003", "fakelet-00004"}
	for _, tc := range []struct {
		name        string
		perNode     bool
		creds       NodeCredentials
		wantConns   int
		wantPerConn int // identities per connection
	}{
		{"per-node, certificates", true, selfSigned, len(nodes), 1},
		{"per-node, impersonation", true, nil, len(nodes), 1},
		{"shared", false, nil, 1, len(nodes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newConnServer(t)
			counter := &Counter{}
			var c agent.Clients
			if tc.perNode {
				var router *PerNode
				var err error
				if c, router, err = PerNodeClients(srv.restConfig(), true, tc.creds, nil, nil, counter); err != nil {
					t.Fatal(err)
				}
				defer router.Close()
			} else {
				// The legacy way keeps every request on the one net/http connection, to count.
				clients, err := SharedClients(srv.restConfig(), 1, true, nil, Path{Legacy: true}, counter)
				if err != nil {
					t.Fatal(err)
				}
				c = clients[0]
			}
			sendAsNodes(t, c, nodes)

			srv.mu.Lock()
			defer srv.mu.Unlock()
			if len(srv.byConn) != tc.wantConns || srv.handshakes != tc.wantConns {
				t.Errorf("%d connections, %d handshakes, want %d each", len(srv.byConn), srv.handshakes, tc.wantConns)
			}
			for conn, ids := range srv.byConn {
				if len(ids) != tc.wantPerConn {
					t.Errorf("connection %s carried %d identities (%v), want %d", conn, len(ids), ids, tc.wantPerConn)
				}
			}
			if got := counter.dialed[connClientGo].Load(); got != int64(tc.wantConns) {
				t.Errorf("the fleet counted %d connections dialed, want %d", got, tc.wantConns)
			}
			if got := counter.Open(); got != int64(tc.wantConns) {
				t.Errorf("the fleet counts %d connections open, want %d", got, tc.wantConns)
			}
			paths := map[string]int{}
			for _, r := range srv.requests {
				paths[r.path]++
				switch {
				case tc.creds != nil && (r.cn == "" || r.impersonated != "" || r.authorization != ""):
					t.Errorf("%s with a certificate of its own: CN %q, impersonating %q, authorization %q; want the certificate alone", r.path, r.cn, r.impersonated, r.authorization)
				case tc.creds == nil && (r.cn != "" || r.impersonated == "" || r.authorization != "Bearer fleet-token"):
					t.Errorf("%s by impersonation: CN %q, impersonating %q, authorization %q; want the fleet's token impersonating the node", r.path, r.cn, r.impersonated, r.authorization)
				}
			}
			paths["/api/v1/nodes/"+nodes[0]]--
			if want := 3 * len(nodes); paths["/api/v1/nodes"] != want || len(paths) != 1+len(nodes)*2 {
				t.Errorf("requests by path %v, want for each node %d watches, its node GETs and its lease PUTs", paths, 3)
			}
		})
	}
}

// TestPerNodeConnectionsCloseWithTheFleet: the connections' gauge falls back to 0 once the router
// closes them.
func TestPerNodeConnectionsCloseWithTheFleet(t *testing.T) {
	srv := newConnServer(t)
	counter := &Counter{}
	c, router, err := PerNodeClients(srv.restConfig(), true, nil, nil, nil, counter)
	if err != nil {
		t.Fatal(err)
	}
	sendAsNodes(t, c, []string{"fakelet-00000", "fakelet-00001"})
	if got := counter.Open(); got != 2 {
		t.Fatalf("%d connections open, want 2", got)
	}
	router.Close()
	if got := counter.Open(); got != 0 {
		t.Errorf("%d connections open after close, want 0", got)
	}
}
