package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"fakelet.dev/fakelet/controlplane"
)

// TestCrashedRunsControlPlaneStops: a run that started the local control plane and was killed
// (SIGKILL: no Leave) has its control plane stopped by the watchdog within seconds, with no other run
// joining or leaving; its components' processes are gone and its state removed.
func TestCrashedRunsControlPlaneStops(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: starts a control plane; skipped under -short")
	}
	binDir, err := filepath.Abs("../bin")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "controlplane")
	p := startFakelet(t, "run", "--controlplane-dir", dir, "--bin-dir", binDir, "--metrics-addr", "", "--nodes", "2", "--duration", "10m")
	var pids []int
	eventually(t, 2*time.Minute, "the run's control plane up and the run attached", func() (bool, error) {
		st, err := controlplane.Status(context.Background(), dir)
		if err != nil || !st.Healthy || st.Users != 1 {
			return false, nil
		}
		pids = pids[:0]
		for _, c := range st.Components {
			pids = append(pids, c.PID)
		}
		return true, nil
	})
	t.Cleanup(func() { controlplane.Down(context.Background(), dir) }) // if the test fails
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	eventually(t, time.Minute, "the crashed run's control plane stopped", func() (bool, error) {
		st, err := controlplane.Status(context.Background(), dir)
		if err != nil || st.Recorded {
			return false, nil
		}
		for _, pid := range pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("stopped %v after the run was killed", time.Since(killed).Round(100*time.Millisecond))
	if _, err := os.Stat(filepath.Join(dir, "watchdog.log")); err != nil {
		t.Errorf("no watchdog log: %v", err)
	}
}
