package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockPatience is how long lockDir waits for a lock that is held. A child this process is starting
// holds a copy of every descriptor open at its fork until its exec closes them, so a lock released
// an instant ago (one Down after another, while a parallel goroutine starts a process) can still be
// held for the child's fork-to-exec; on a loaded machine that takes milliseconds.
const lockPatience = 3 * time.Second

// lockDir takes an exclusive lock on dir for the length of a Down, a restart or a Prometheus change,
// so that two fakelets do not start or stop the same control plane at once. It waits up to
// lockPatience, and then reports the other fakelet. The kernel drops the lock if this process dies,
// so a crash never leaves dir locked.
func lockDir(dir string) (unlock func(), err error) {
	return lockDirWithin(dir, lockPatience)
}

func lockDirWithin(dir string, patience time.Duration) (unlock func(), err error) {
	ctx, cancel := context.WithTimeoutCause(context.Background(), patience, errLockHeld)
	defer cancel()
	unlock, err = waitLockDir(ctx, dir)
	if errors.Is(err, errLockHeld) {
		return nil, fmt.Errorf("lock control plane directory %s: another fakelet is starting or stopping it", dir)
	}
	return unlock, err
}

var errLockHeld = errors.New("held by another")

// waitLockDir takes the lock on dir, waiting for another fakelet's start or stop to end, until ctx
// ends. Closing the file releases the lock.
func waitLockDir(ctx context.Context, dir string) (unlock func(), err error) {
	f, err := openNoFollow(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock control plane directory %s: %w", dir, err)
	}
	locked := make(chan error, 1)
	go func() { locked <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-locked:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock control plane directory %s: %w", dir, err)
		}
		return func() { f.Close() }, nil
	case <-ctx.Done():
		go func() { <-locked; f.Close() }() // the lock, if it comes, is let go at once
		return nil, fmt.Errorf("lock control plane directory %s: %w", dir, context.Cause(ctx))
	}
}
