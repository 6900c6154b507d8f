// Package standin is a benchmark target only, never a run's target: an in-process stand-in for
// kube-apiserver that answers a fleet's requests as an apiserver does on the wire (HTTP/2 over TLS,
// protobuf and JSON bodies, the apiserver's status codes, resourceVersions that advance, watches with
// bookmarks and streaming lists) while costing little itself, so that `fakelet bench --target
// stand-in` measures the fleet's own costs at sizes no co-located apiserver holds.
//
// It keeps every object in memory, one map per resource, encodes each object once per change
// (protobuf with k8s.io/api's generated Marshal, JSON on demand) and shares that encoding between
// every GET, answer and watch event. Nodes and Pods are kept as that protobuf alone and decoded
// when a write or a JSON answer needs them; a write's decoding, store and encoding run on a few
// long-lived workers rather than on the request's fresh goroutine, while that goroutine reads the
// body and writes the answer, held for Options.WriteLatency as an apiserver's etcd write holds it,
// through x/net's server. It has no controllers, no admission, no authorization (every review is
// allowed), and a watch history of a number of changes a resource (Options.WatchHistory)
// where the apiserver's keeps 75 s of them: a watch resumed before it is answered 410 Expired and
// its client relists. `fakelet run` refuses it as a target (IsStandIn):
// only `fakelet bench` drives a fleet against it.
package standin

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
)

// GitVersion is what the stand-in's /version says, so that a run can tell it from an apiserver.
const GitVersion = "v1.37.2-fakelet-stand-in"

// BenchEnv, set to BenchEnvValue in a fleet's environment, is how `fakelet bench` lets the `fakelet
// run` it starts target the stand-in; any other run refuses it.
const (
	BenchEnv      = "FAKELET_BENCH_TARGET"
	BenchEnvValue = "stand-in"
)

// Options configure a stand-in. Zero values take the defaults below.
type Options struct {
	// Bookmarks is the interval between the BOOKMARK events of a watch that asks for them; the
	// apiserver's watch cache sends one about every minute.
	Bookmarks time.Duration
	// WatchBuffer is how many events a watch holds unsent before the stand-in ends it as too slow,
	// as the apiserver's cacher ends a watcher that cannot keep up.
	WatchBuffer int
	// WatchHistory is how many of a resource's latest changes the stand-in keeps, so that a watch
	// resumed at a resourceVersion among them, as one it ended as too slow is, is sent what it
	// missed; one resumed before them is answered 410 Expired and relists.
	WatchHistory int
	// MinRequestTimeout is the apiserver's --min-request-timeout: a watch without timeoutSeconds
	// lasts between one and two of it.
	MinRequestTimeout time.Duration
	// WriteLatency is how long each write (create, update, patch, delete) is held before it is
	// answered, as an apiserver's admission, validation and etcd write hold one. Against a server
	// that answers at once, the fleet's threads are often still awake when the answer arrives;
	// against an apiserver they sleep and are woken, which is part of what a renewal costs the
	// fleet. Zero answers at once.
	WriteLatency time.Duration
	Clock        clock.WithTicker
}

func (o Options) withDefaults() Options {
	if o.Bookmarks <= 0 {
		o.Bookmarks = time.Minute
	}
	if o.WatchBuffer <= 0 {
		o.WatchBuffer = 100
	}
	if o.WatchHistory <= 0 {
		o.WatchHistory = 10000
	}
	if o.MinRequestTimeout <= 0 {
		o.MinRequestTimeout = 30 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Server is one stand-in: its objects, its watches and its counts of the requests it answered.
type Server struct {
	o      Options
	rv     atomic.Uint64 // the last resourceVersion given, shared by every resource as etcd's revision is
	stores map[string]*store
	counts requestCounts
	token  string
	bearer string        // the Authorization header that carries token, made once
	audit  atomic.Uint64 // the last Audit-Id given
	// workers apply writes while Serve serves; nil, for a Server only handed requests (tests), each
	// is applied on its request's goroutine.
	workers *workers
}

// New returns a stand-in holding the namespaces an apiserver starts with.
func New(o Options) *Server {
	token := randomToken()
	s := &Server{o: o.withDefaults(), stores: map[string]*store{}, token: token, bearer: "Bearer " + token}
	for _, r := range resources {
		s.stores[r.path()] = newStore(s, r)
	}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if err := s.seedNamespace(ns); err != nil {
			panic(err) // a fixed object of a fixed kind: only a broken resource table fails here
		}
	}
	return s
}

// writeWorkers is how many writes are applied at once on the workers' grown stacks: a few more
// than the cores, for a write whose goroutine is preempted or waits on the store's lock.
const writeWorkers = 8

// Token is the bearer token every request must carry.
func (s *Server) Token() string { return s.token }

// Serve answers on l over TLS with cert until ctx ends, with the HTTP/2 settings a kube-apiserver
// serves with (k8s.io/apiserver's secure_serving.go and its recommended 1000 streams a connection).
func (s *Server) Serve(ctx context.Context, l net.Listener, cert tls.Certificate) error {
	done := make(chan struct{})
	defer close(done)
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	s.workers = startWorkers(wctx, writeWorkers)
	srv := &http.Server{
		Handler:           s,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{http2.NextProtoTLS, "http/1.1"}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 32 * time.Second,
	}
	const body99 = 256 * 1024
	h2 := &http2.Server{IdleTimeout: 90 * time.Second, MaxUploadBufferPerStream: body99, MaxReadFrameSize: body99, MaxConcurrentStreams: 1000}
	h2.MaxUploadBufferPerConnection = h2.MaxUploadBufferPerStream * int32(h2.MaxConcurrentStreams)
	if err := http2.ConfigureServer(srv, h2); err != nil {
		return err
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = srv.Close()
		case <-done:
		}
	}()
	err := srv.ServeTLS(l, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return ctx.Err()
	}
	return err
}

// WriteKubeconfig writes a kubeconfig for the stand-in at url, trusting caPEM, with its token.
func (s *Server) WriteKubeconfig(path, url string, caPEM []byte) error {
	const name = "fakelet-stand-in"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: s.token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	tmp := path + ".tmp"
	if err := clientcmd.WriteToFile(*cfg, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path) // whoever waits for the file reads it whole
}
