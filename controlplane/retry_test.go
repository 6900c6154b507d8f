package controlplane

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHelperComponent is not a test: run as `<test binary> -test.run=^TestHelperComponent$ --
// component MODE PORT MARKER`, it plays a component that loses its port to another process.
// MODE busy-once fails the first time (MARKER absent) and then serves /health on PORT; always-busy
// fails every time.
func TestHelperComponent(t *testing.T) {
	args := flag.Args()
	if len(args) != 4 || args[0] != "component" {
		return // an ordinary test run
	}
	mode, port, marker := args[1], args[2], args[3]
	_, err := os.Stat(marker)
	if mode == "always-busy" || os.IsNotExist(err) {
		os.WriteFile(marker, nil, 0o600)
		fmt.Printf("listen tcp 127.0.0.1:%s: bind: address already in use\n", port)
		os.Exit(1)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("serving")
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
}

func TestStartComponentRetriesOnPortInUse(t *testing.T) {
	tests := []struct {
		mode        string
		wantErr     string
		wantRetries int
	}{
		{mode: "busy-once", wantRetries: 1},
		{mode: "always-busy", wantErr: "address already in use", wantRetries: startAttempts - 1},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			dir := privateTempDir(t)
			var progress bytes.Buffer
			s := &starter{
				ctx: context.Background(), dir: dir, progress: &progress, state: &State{},
				opts: Options{StartTimeout: 30 * time.Second, dieWithParent: true},
			}
			marker := filepath.Join(dir, "marker")
			c, err := s.startComponent("helper", 1, http.DefaultClient, func(ports []int) ComponentState {
				port := strconv.Itoa(ports[0])
				return ComponentState{
					Name:      "helper",
					Args:      []string{os.Args[0], "-test.run=^TestHelperComponent$", "--", "component", tt.mode, port, marker},
					Ports:     map[string]int{"port": ports[0]},
					HealthURL: "http://127.0.0.1:" + port + "/health",
					Log:       logPath(dir, "helper"),
				}
			}, nil)
			t.Cleanup(func() { stopComponent(context.Background(), procfs{}, c, time.Second) })
			if got := strings.Count(progress.String(), "lost a port"); got != tt.wantRetries {
				t.Errorf("%d retries, want %d; progress:\n%s", got, tt.wantRetries, progress.String())
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("startComponent error = %v, want one quoting %q from the log", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if recorded, _ := s.state.Component("helper"); recorded.PID != c.PID || inspect(procfs{}, recorded) != procOurs {
				t.Errorf("state records pid %d, the running helper is %d", recorded.PID, c.PID)
			}
		})
	}
}
