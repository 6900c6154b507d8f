package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync/atomic"
	"time"
)

// DefaultAddr is where fakelet serves its metrics unless told otherwise: loopback only, so that a run
// on a shared machine exposes nothing (pprof least of all) unless asked to.
const DefaultAddr = "127.0.0.1:9464"

// ServerOptions configure Serve.
type ServerOptions struct {
	// Pprof adds net/http/pprof's handlers under /debug/pprof/.
	Pprof bool
}

// Server serves /metrics and /healthz (and /debug/pprof/ if asked) on one listener, and the run's
// report under /report/ once ServeReport names its directory.
type Server struct {
	ln     net.Listener
	srv    *http.Server
	done   chan error
	report atomic.Pointer[os.Root] // the report's directory; nil until the report is written
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves m in the background until
// Shutdown. It fails at once if addr cannot be listened on.
func Serve(addr string, m *Metrics, opts ServerOptions) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	s := &Server{ln: ln, done: make(chan error, 1)}
	mux.Handle("GET /report/", http.StripPrefix("/report", http.HandlerFunc(s.serveReport)))
	if opts.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index) // also serves the named profiles: heap, goroutine, ...
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: /debug/pprof/profile?seconds=30 writes for as long as it was asked.
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// ServeReport serves the files in dir, read-only, under /report/ (a listing at /report/): a shard's
// report can then be fetched over the metrics port (kubectl port-forward), as a distroless pod
// has no tar for kubectl cp. dir is opened as an os.Root, so no path (../, a symlink) leads out
// of it.
func (s *Server) ServeReport(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("serve the report: %w", err)
	}
	if old := s.report.Swap(root); old != nil {
		old.Close()
	}
	return nil
}

func (s *Server) serveReport(w http.ResponseWriter, r *http.Request) {
	root := s.report.Load()
	if root == nil {
		http.Error(w, "no report yet: fakelet serves it here once the run has ended and written it", http.StatusNotFound)
		return
	}
	http.FileServerFS(root.FS()).ServeHTTP(w, r)
}

// Addr is the address the server listens on, with the port it got.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the metrics endpoint, http://ADDR/metrics.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// ReportURL is where the report is served, http://ADDR/report/.
func (s *Server) ReportURL() string { return "http://" + s.Addr() + "/report/" }

// Loopback tells whether the server listens on a loopback address only.
func (s *Server) Loopback() bool {
	ap, ok := s.ln.Addr().(*net.TCPAddr)
	return ok && ap.IP.IsLoopback()
}

// Shutdown stops accepting scrapes and waits for the ones in flight, until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if root := s.report.Swap(nil); root != nil {
		root.Close()
	}
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
