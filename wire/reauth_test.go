package wire

import (
	"context"
	"os"
	"path/filepath"
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
	var requests atomic.Int32
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
	// Each run prints the next token: tok-1, then tok-2.
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
	defer c.Close()
	resp, err := c.Do(context.Background(), &Request{Path: "/x"})
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if resp.Status != 200 || string(resp.Body) != "ok" || requests.Load() != 2 || string(runs) != "2\n" {
		t.Errorf("answered %d %q after %d requests and %q runs of the plugin, want 200 after 2 requests and 2 runs", resp.Status, resp.Body, requests.Load(), runs)
	}
}
