package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The users of a control plane are the processes attached to it with Up (Options.UntilLastUser) or
// Join, each recorded by a file DIR/users/<pid>-<start time>-<random> until it leaves. A control
// plane that a run started is stopped by the Leave of its last user, so a run that started it does
// not stop it under another run still attached; one started by `fakelet controlplane up` is left up.
// A user that died without leaving is pruned when its process is found gone (or its pid reused):
// by a later Join or Leave, and by the watchdog Up starts beside a control plane it started for runs
// (watchdog.go), which stops it within watchdogEvery once no user is alive, so a crashed run's
// control plane does not wait for another run to come and go.

func usersDir(dir string) string { return filepath.Join(dir, "users") }

// addUser records the calling process as a user of the control plane in dir; the caller holds the
// directory's lock.
func addUser(dir string, r procReader) (string, error) {
	self, err := r.process(os.Getpid())
	if err != nil {
		return "", fmt.Errorf("record user of control plane in %s: %w", dir, err)
	}
	if err := os.Mkdir(usersDir(dir), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("record user of control plane in %s: %w", dir, err)
	}
	if err := checkDir(usersDir(dir)); err != nil {
		return "", err
	}
	// One file per attachment, not per process: a process may attach twice (tests, compare).
	f, err := os.CreateTemp(usersDir(dir), fmt.Sprintf("%d-%d-*", os.Getpid(), self.startTime))
	if err != nil {
		return "", fmt.Errorf("record user of control plane in %s: %w", dir, err)
	}
	return f.Name(), f.Close()
}

// liveUsers returns the users recorded in dir whose process still runs, and removes the others'
// files; the caller holds the directory's lock.
func liveUsers(dir string, r procReader) ([]string, error) { return users(dir, r, true) }

// users returns the users recorded in dir whose process still runs, removing the others' files if
// prune is set.
func users(dir string, r procReader, prune bool) ([]string, error) {
	entries, err := os.ReadDir(usersDir(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list users of control plane in %s: %w", dir, err)
	}
	var live []string
	for _, e := range entries {
		path := filepath.Join(usersDir(dir), e.Name())
		if userAlive(e.Name(), r) {
			live = append(live, path)
			continue
		}
		if !prune {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove user %s of control plane in %s: %w", e.Name(), dir, err)
		}
	}
	return live, nil
}

// userAlive tells whether the process a user file names, <pid>-<start time>-..., still runs.
func userAlive(name string, r procReader) bool {
	parts := strings.SplitN(name, "-", 3)
	if len(parts) != 3 {
		return false
	}
	pid, err1 := strconv.Atoi(parts[0])
	start, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	info, err := r.process(pid)
	return err == nil && info.startTime == start
}

// Join attaches to the control plane running in dir, as Attach does, and counts the caller as one of
// its users until Leave. It waits while another fakelet starts or stops it.
func Join(ctx context.Context, dir string) (*ControlPlane, error) {
	dir, err := checkedDir(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("attach to control plane in %s: %w", dir, err)
	}
	unlock, err := waitLockDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cp, err := Attach(dir)
	if err != nil {
		return nil, err
	}
	if cp.userFile, err = addUser(dir, procfs{}); err != nil {
		return nil, err
	}
	return cp, nil
}

// Left says what Leave did.
type Left struct {
	// Users is how many users are still attached.
	Users int
	// Stopped: this was the last user of a control plane started for runs, and Leave stopped it.
	Stopped bool
	// Kept: started by `fakelet controlplane up` (without Options.UntilLastUser), so left up.
	Kept bool
}

func (l Left) String() string {
	switch {
	case l.Stopped:
		return "stopped the local control plane: no other run uses it"
	case l.Users > 0:
		return fmt.Sprintf("left the local control plane up: %d other user(s) still attached", l.Users)
	case l.Kept:
		return "left the local control plane up: it was started by fakelet controlplane up (fakelet controlplane down stops it)"
	default:
		return "the local control plane was already stopped"
	}
}

// Leave ends the caller's use of the control plane, which it joined with Join or Up with
// Options.UntilLastUser. If no other user is left and the control plane was started for runs, it
// stops it as Down does.
func (cp *ControlPlane) Leave(ctx context.Context) (Left, error) {
	if cp.userFile == "" {
		return Left{}, fmt.Errorf("leave control plane in %s: not joined", cp.Dir)
	}
	unlock, err := waitLockDir(ctx, cp.Dir)
	if err != nil {
		return Left{}, err
	}
	defer unlock()
	if err := os.Remove(cp.userFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Left{}, fmt.Errorf("leave control plane in %s: %w", cp.Dir, err)
	}
	cp.userFile = ""
	st, err := readState(cp.Dir)
	if errors.Is(err, errNoState) {
		return Left{}, nil
	}
	if err != nil {
		return Left{}, fmt.Errorf("leave control plane in %s: %w", cp.Dir, err)
	}
	if !st.StartedAt.Equal(cp.state.StartedAt) {
		return Left{}, nil // stopped and replaced by another since: not this caller's any more
	}
	users, err := liveUsers(cp.Dir, procfs{})
	if err != nil {
		return Left{}, err
	}
	left := Left{Users: len(users), Kept: !st.UntilLastUser}
	if left.Users > 0 || left.Kept {
		return left, nil
	}
	if err := stopAll(ctx, cp.Dir, st); err != nil {
		return left, fmt.Errorf("stop control plane in %s after its last user left: %w", cp.Dir, err)
	}
	left.Stopped = true
	return left, nil
}
