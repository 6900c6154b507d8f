package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// A control plane started for runs (Options.UntilLastUser) is stopped by its last user's Leave. A
// user that crashes never leaves; so that its control plane does not run on until some later run
// happens to join or leave, Up starts a watchdog beside the components: the same executable,
// detached as they are, which every watchdogEvery prunes the users that are gone and stops the
// control plane once none is left. It ends by itself when the control plane it watches is stopped
// or replaced.

// WatchdogEnv, set to a control plane directory, makes RunWatchdogIfAsked watch it.
const WatchdogEnv = "FAKELET_CONTROLPLANE_WATCHDOG"

// watchdogEvery is how often the watchdog looks for users: a crashed run's control plane stops
// within this much of the crash.
const watchdogEvery = 5 * time.Second

// RunWatchdogIfAsked runs the watchdog and exits if this process was started as one (WatchdogEnv),
// and returns at once otherwise. A program that calls Up with UntilLastUser calls it first thing in
// main, since the watchdog is that program started again.
func RunWatchdogIfAsked() {
	dir := os.Getenv(WatchdogEnv)
	if dir == "" {
		return
	}
	err := watchdog(context.Background(), dir, procfs{}, clock.RealClock{}, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "control plane watchdog in %s: %v\n", dir, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startWatchdog starts this executable as the watchdog of the control plane in dir, detached from
// this process, its output appended to DIR/watchdog.log.
func startWatchdog(dir string) error {
	if testing.Testing() {
		// A test binary started again would run its tests, not the watchdog; tests stop what
		// they start.
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start the control plane's watchdog: %w", err)
	}
	log, err := openNoFollow(filepath.Join(dir, "watchdog.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the control plane watchdog's log: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), WatchdogEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the control plane's watchdog %s: %w", exe, err)
	}
	// Never waited for by this process: when it exits first, init reaps the watchdog.
	return cmd.Process.Release()
}

// watchdog watches the control plane recorded in dir when it starts, until it is stopped, replaced,
// or its last user is gone, which it then stops.
func watchdog(ctx context.Context, dir string, r procReader, clk clock.Clock, log io.Writer) error {
	st, err := readState(dir)
	if errors.Is(err, errNoState) {
		return nil
	}
	if err != nil {
		return err
	}
	startedAt := st.StartedAt
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clk.After(watchdogEvery):
		}
		done, err := watchOnce(ctx, dir, startedAt, r, stopAll)
		if err != nil {
			fmt.Fprintf(log, "%s: %v\n", time.Now().Format(time.RFC3339), err) // a log line's date: wall time
		}
		if done {
			return nil
		}
	}
}

// watchOnce looks at the control plane in dir once, holding its lock: done when it is no longer the
// one started at startedAt (stopped, or replaced by another with a watchdog of its own), and after
// it stopped it with stop because no user is alive.
func watchOnce(ctx context.Context, dir string, startedAt time.Time, r procReader, stop func(context.Context, string, *State) error) (done bool, err error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return true, nil // removed with all it held
	}
	unlock, err := waitLockDir(ctx, dir)
	if err != nil {
		return false, err
	}
	defer unlock()
	st, err := readState(dir)
	if errors.Is(err, errNoState) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if !st.StartedAt.Equal(startedAt) || !st.UntilLastUser {
		return true, nil
	}
	users, err := liveUsers(dir, r)
	if err != nil || len(users) > 0 {
		return false, err
	}
	stopCtx, cancel := context.WithTimeout(ctx, 2*stopGracePeriod*time.Duration(len(st.Components)+1))
	defer cancel()
	if err := stop(stopCtx, dir, st); err != nil {
		return false, fmt.Errorf("stop the control plane whose users are all gone: %w", err)
	}
	return true, nil
}
