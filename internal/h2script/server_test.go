package h2script

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestServerAgainstGoClient: a request with a body reaches the script whole, headers decoded; its
// answer reaches x/net's client; a request the client gives up on comes back as a reset; one
// connection carries them all.
func TestServerAgainstGoClient(t *testing.T) {
	type seen struct {
		e  Event
		ok bool
	}
	events := make(chan seen, 8)
	next := func() seen {
		t.Helper()
		select {
		case s := <-events:
			return s
		case <-time.After(20 * time.Second):
			t.Fatal("the script saw nothing more")
			return seen{}
		}
	}
	srv := New(t, nil, func(c *Conn) {
		for {
			e, ok := c.Next()
			events <- seen{e, ok}
			if !ok || e.Reset {
				return // the connection closes: the test's cleanup does not wait for the client's
			}
			if !e.Reset && e.Get(":path") == "/echo" {
				c.Respond(e.StreamID, http.StatusCreated, "text/plain", append([]byte(e.Get(":method")+" "), e.Body...))
			}
		}
	})
	tr := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: srv.Roots()}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}

	resp, err := client.Post(srv.URL()+"/echo", "text/plain", bytes.NewReader([]byte("a body")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(body) != "POST a body" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("answered %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if s := next(); !s.ok || s.e.Reset || string(s.e.Body) != "a body" || s.e.Get(":method") != "POST" || s.e.Get("content-type") != "text/plain" {
		t.Errorf("the script saw %+v", s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+"/held", nil)
	done := make(chan error, 1)
	go func() {
		_, err := client.Do(req)
		done <- err
	}()
	held := next()
	if !held.ok || held.e.Reset || held.e.Get(":path") != "/held" {
		t.Fatalf("the script saw %+v, want the held request", held)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled request succeeded")
	}
	if s := next(); !s.ok || !s.e.Reset || s.e.StreamID != held.e.StreamID || s.e.ErrCode != http2.ErrCodeCancel {
		t.Errorf("the script saw %+v, want the reset of stream %d", s, held.e.StreamID)
	}
	if n := srv.Accepted(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}
