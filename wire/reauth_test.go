package wire

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"fakelet.dev/fakelet/internal/h2script"
)

// TestUnauthorizedRunsTheExecPluginAgain: a request refused with 401 because the exec plugin's
// token has expired makes the plugin run again, once, and goes again with the new token: one
// answer lost, not the minute until the credentials would be read again.
func TestUnauthorizedRunsTheExecPluginAgain(t *testing.T) {
	c, requests, runs := execPluginClient(t)
	resp, err := c.Do(context.Background(), &Request{Path: "/x"})
	if err != nil {
		t.Fatal(err)
	}
	if n := runs(); resp.Status != 200 || string(resp.Body) != "ok" || requests.Load() != 2 || n != 2 {
		t.Errorf("answered %d %q after %d requests and %d runs of the plugin, want 200 after 2 requests and 2 runs", resp.Status, resp.Body, requests.Load(), n)
	}
}

// TestUnauthorizedWatchRenewsTheCredentials: a watch refused with 401 ends with the 401, as
// client-go's does, and the credentials are renewed meanwhile: a watch sent again soon after
// carries the new token. Each watch ends before the next goes (no sleep: the loop waits on each).
func TestUnauthorizedWatchRenewsTheCredentials(t *testing.T) {
	c, _, runs := execPluginClient(t)
	for try := 0; ; try++ {
		if try == 1000 {
			t.Fatalf("1000 watches refused with 401; the plugin ran %d times", runs())
		}
		status := make(chan int, 1)
		c.Stream(context.Background(), &Request{Path: "/watch"}, Handlers{
			OnResponse: func(r *Response) error { status <- r.Status; return nil },
			OnData:     func([]byte) error { return nil },
			OnEnd:      func(error) {},
		})
		if <-status == 200 {
			break
		}
	}
	if n := runs(); n != 2 {
		t.Errorf("the plugin ran %d times, want 2: once for the first token, once after the 401", n)
	}
}

// execPluginClient is a Client whose credentials come from an exec plugin that prints tok-1, then
// tok-2, ... at each run, against a server that takes tok-2 only; it returns the requests the
// server saw and the plugin's runs so far.
func execPluginClient(t *testing.T) (*Client, *atomic.Int32, func() int) {
	requests := new(atomic.Int32)
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		for {
			r, ok := rc.Request()
			if !ok {
				return
			}
			requests.Add(1)
			if r.Get("authorization") != "Bearer tok-2" {
				rc.Respond(r.StreamID, 401, "application/json", []byte(`{"kind":"Status","code":401}`))
				continue
			}
			rc.Respond(r.StreamID, 200, "text/plain", []byte("ok"))
		}
	})
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin")
	script := `#!/bin/sh
n=$(cat "$DIR/runs" 2>/dev/null || echo 0)
n=$((n+1))
echo $n > "$DIR/runs"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-%s"}}' "$n"
`
	if err := os.WriteFile(plugin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg, err := ForConfig(&rest.Config{Host: srv.URL(), TLSClientConfig: rest.TLSClientConfig{CAData: srv.CA()},
		ExecProvider: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: plugin,
			Env: []clientcmdapi.ExecEnvVar{{Name: "DIR", Value: dir}}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	return c, requests, runs
}
