package standin

import (
	"context"
	"errors"
	"net"
	"time"

	"k8s.io/client-go/rest"
)

// TB is what ServeLoopback needs of a test or benchmark (testing.TB), so that the package does not
// import testing.
type TB interface {
	Helper()
	Cleanup(func())
	Fatal(args ...any)
	Errorf(format string, args ...any)
}

// ServeLoopback serves a stand-in on a loopback port for as long as t runs, for tests that want an
// apiserver on the wire, and returns it with a client configuration that reaches it (its CA and its
// token, content types left to the caller). It fails t if the stand-in cannot start or does not end
// cleanly.
func ServeLoopback(t TB, o Options) (*Server, *rest.Config) {
	t.Helper()
	cert, caPEM, err := SelfSigned(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, cert) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the stand-in: %v", err)
		}
	})
	return s, &rest.Config{Host: "https://" + l.Addr().String(), BearerToken: s.token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
}
