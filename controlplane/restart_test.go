package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKillAndStartComponent plays the apiserver with the helper component: killed, it stops answering;
// started again, it answers on the same port from a new pid, and the state records that pid.
func TestKillAndStartComponent(t *testing.T) {
	dir := privateTempDir(t)
	if _, _, err := ensurePKI(dir, false); err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil { // the helper serves at once
		t.Fatal(err)
	}
	port := strconv.Itoa(ports[0])
	recorded := ComponentState{
		Name:      APIServer,
		Args:      []string{os.Args[0], "-test.run=^TestHelperComponent$", "--", "component", "busy-once", port, marker},
		Ports:     map[string]int{"secure": ports[0]},
		HealthURL: "http://127.0.0.1:" + port + "/health",
		Log:       logPath(dir, APIServer),
	}
	if err := writeState(dir, &State{Version: stateVersion, Components: []ComponentState{recorded}}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	client, err := dirHTTPClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	var last ComponentState
	t.Cleanup(func() { stopComponent(context.Background(), procfs{}, last, time.Second) })

	first, err := startRecorded(ctx, dir, APIServer, 30*time.Second, true)
	last = first
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startRecorded(ctx, dir, APIServer, 30*time.Second, true); err == nil || !strings.Contains(err.Error(), "still runs") {
		t.Errorf("starting a running component: %v, want a refusal", err)
	}

	if err := KillComponent(ctx, dir, APIServer); err != nil {
		t.Fatal(err)
	}
	if s := inspect(procfs{}, first); s != procGone {
		t.Errorf("after KillComponent the process is %s", s)
	}
	if err := probe(ctx, client, recorded.HealthURL); err == nil {
		t.Error("a killed component still answers")
	}
	if err := KillComponent(ctx, dir, APIServer); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("killing it again: %v, want an error saying it is gone", err)
	}

	second, err := startRecorded(ctx, dir, APIServer, 30*time.Second, true)
	last = second
	if err != nil {
		t.Fatal(err)
	}
	if second.PID == first.PID || second.Ports["secure"] != ports[0] {
		t.Errorf("restarted as pid %d on %v; want a new pid on the same port %d", second.PID, second.Ports, ports[0])
	}
	if err := probe(ctx, client, recorded.HealthURL); err != nil {
		t.Errorf("restarted component: %v", err)
	}
	st, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := st.Component(APIServer); c.PID != second.PID || inspect(procfs{}, c) != procOurs {
		t.Errorf("state records pid %d, the running component is %d", c.PID, second.PID)
	}
}

func TestRestartComponentNamesWhatIsWrong(t *testing.T) {
	dir := privateTempDir(t)
	if err := KillComponent(t.Context(), dir, "kube-proxy"); err == nil || !strings.Contains(err.Error(), `no component "kube-proxy"`) {
		t.Errorf("unknown component: %v", err)
	}
	if _, err := StartComponent(t.Context(), dir, Etcd); err == nil || !strings.Contains(err.Error(), "no control plane state") {
		t.Errorf("no control plane: %v", err)
	}
}
