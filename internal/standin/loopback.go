package standin

import (
	"context"
	"errors"
	"net"
	"time"

	"k8s.io/client-go/rest"
)

// ServeLoopback serves a stand-in on a loopback port until stop, for tests that want an apiserver
// on the wire, and returns a client configuration that reaches it (its CA and its token, content
// types left to the caller). stop ends it and says how serving ended.
func ServeLoopback(o Options) (s *Server, cfg *rest.Config, stop func() error, err error) {
	cert, caPEM, err := SelfSigned(time.Now())
	if err != nil {
		return nil, nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, err
	}
	s = New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, cert) }()
	stop = func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	cfg = &rest.Config{Host: "https://" + l.Addr().String(), BearerToken: s.token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	return s, cfg, stop, nil
}
