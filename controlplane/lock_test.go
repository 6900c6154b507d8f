package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// heldByChild locks dir's lock file and hands the descriptor to a child that keeps it for
// holdFor, then closes this process's copy: the lock stays held, as it does for a child of this
// process between its fork and its exec. The child is waited for when the test ends.
func heldByChild(t *testing.T, dir string, holdFor time.Duration) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", strconv.FormatFloat(holdFor.Seconds(), 'f', -1, 64))
	child.ExtraFiles = []*os.File{f}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	f.Close()
}

// TestLockWaitsForACopyHeldByAChild: a lock just released by this process but still held through
// a child's copy of the descriptor is taken once the child lets it go, not refused.
func TestLockWaitsForACopyHeldByAChild(t *testing.T) {
	dir := privateTempDir(t)
	heldByChild(t, dir, 200*time.Millisecond)
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock held for 200 ms by a child: %v, want it taken when the child exits", err)
	}
	unlock()
}

// TestLockHeldThroughoutIsRefused: a lock held past the patience names the other fakelet.
func TestLockHeldThroughoutIsRefused(t *testing.T) {
	dir := privateTempDir(t)
	heldByChild(t, dir, time.Minute)
	_, err := lockDirWithin(dir, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "another fakelet is starting or stopping it") {
		t.Fatalf("lock held by another: %v, want it refused, naming another fakelet", err)
	}
}
