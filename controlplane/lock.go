package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir for the length of an Up or Down, so that two fakelets do
// not start or stop the same control plane at once. The kernel drops the lock if this process
// dies, so a crash never leaves dir locked.
func lockDir(dir string) (unlock func(), err error) {
	f, err := openNoFollow(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock control plane directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock control plane directory %s: another fakelet is starting or stopping it", dir)
		}
		return nil, fmt.Errorf("lock control plane directory %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// waitLockDir is lockDir that waits for another fakelet's start or stop to end, until ctx ends.
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
