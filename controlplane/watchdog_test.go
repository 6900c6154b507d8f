package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// watchedDir is a control plane directory with a recorded state started at t0 for runs, and a user
// file for each of users (pids of fakeProcs).
func watchedDir(t *testing.T, untilLastUser bool, users ...string) (string, time.Time) {
	t.Helper()
	dir := privateTempDir(t)
	t0 := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	if err := writeState(dir, &State{Version: stateVersion, StartedAt: t0, UntilLastUser: untilLastUser}); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(usersDir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if err := os.WriteFile(filepath.Join(usersDir(dir), u), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, t0
}

// TestWatchdogStopsTheControlPlaneOfACrashedRun: a control plane started for runs, whose only user
// died without leaving, is stopped by its watchdog at its next look, with no other run joining or
// leaving; one with a live user, one started by `fakelet controlplane up`, and one replaced by
// another since are not.
func TestWatchdogStopsTheControlPlaneOfACrashedRun(t *testing.T) {
	procs := fakeProcs{100: {startTime: 7}}
	for _, tc := range []struct {
		name          string
		untilLastUser bool
		users         []string
		startedAt     time.Duration // after the recorded start: another control plane's
		stopped, done bool
	}{
		{"its only user crashed", true, []string{"200-9-a"}, 0, true, true},
		{"its user's pid reused", true, []string{"100-3-a"}, 0, true, true},
		{"a user alive", true, []string{"200-9-a", "100-7-b"}, 0, false, false},
		{"started by fakelet controlplane up", false, []string{"200-9-a"}, 0, false, true},
		{"replaced by another", true, []string{"200-9-a"}, time.Second, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, t0 := watchedDir(t, tc.untilLastUser, tc.users...)
			stopped := false
			stop := func(context.Context, string, *State) error { stopped = true; return nil }
			done, err := watchOnce(t.Context(), dir, t0.Add(-tc.startedAt), procs, stop)
			if err != nil {
				t.Fatal(err)
			}
			if stopped != tc.stopped || done != tc.done {
				t.Errorf("stopped %v, done %v; want %v, %v", stopped, done, tc.stopped, tc.done)
			}
		})
	}
}

// TestWatchdogLooksEveryFewSecondsAndEndsWithItsControlPlane: the watchdog looks every
// watchdogEvery on its clock while a user lives, and returns at its first look once the control plane
// is gone.
func TestWatchdogLooksEveryFewSecondsAndEndsWithItsControlPlane(t *testing.T) {
	dir, _ := watchedDir(t, true, "100-7-a")
	clk := testingclock.NewFakeClock(time.Now())
	done := make(chan error, 1)
	go func() { done <- watchdog(t.Context(), dir, fakeProcs{100: {startTime: 7}}, clk, os.Stderr) }()
	// tick steps the clock once the watchdog waits on its ticker; false if it returned instead.
	tick := func() bool {
		for !clk.HasWaiters() {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				return false
			default:
				runtime.Gosched()
			}
		}
		clk.Step(watchdogEvery)
		return true
	}
	for i := range 3 {
		if !tick() {
			t.Fatalf("the watchdog returned after %d looks, with its user alive", i)
		}
	}
	if err := removeState(dir); err != nil {
		t.Fatal(err)
	}
	for looks := 0; tick(); looks++ {
		if looks > 1 {
			t.Fatal("the watchdog still runs two looks after its control plane was stopped")
		}
	}
}

// TestWatchdogEndsWhenItsDirectoryIsRemoved: a removed directory is a stopped control plane.
func TestWatchdogEndsWhenItsDirectoryIsRemoved(t *testing.T) {
	dir, t0 := watchedDir(t, true, "100-7-a")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	done, err := watchOnce(t.Context(), dir, t0, fakeProcs{}, nil)
	if !done || err != nil {
		t.Errorf("done %v, %v; want done", done, err)
	}
}
