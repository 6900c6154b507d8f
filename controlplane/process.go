package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a component this process started. exited is closed once it has exited and been reaped.
type process struct {
	pid    int
	exited chan struct{}
	err    error // how it exited; read it only after exited is closed
}

// startDetached starts args[0] with its own session (so its own process group, and no controlling
// terminal: Ctrl-C or a closed terminal of `fakelet controlplane up` does not reach it), stdin from
// /dev/null and stdout and stderr appended to logPath. It outlives this process unless dieWithParent
// is set, which tests use so that a killed `go test` does not leave components behind.
func startDetached(args []string, logPath string, dieWithParent bool) (*process, error) {
	log, err := openNoFollow(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log for %s: %w", filepath.Base(args[0]), err)
	}
	defer log.Close() // the child has its own copy
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log // an *os.File goes to the child as is: no copying goroutine
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if dieWithParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	p := &process{pid: cmd.Process.Pid, exited: make(chan struct{})}
	// Reap it, or a component that dies while this process lives would stay a zombie. When this
	// process exits first (fakelet controlplane up), init adopts and reaps it.
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// procStatus is what /proc says about a recorded component.
type procStatus int

const (
	procGone    procStatus = iota // no such process, or a zombie
	procOurs                      // alive, and its command line is the one we started
	procForeign                   // the pid is alive but is some other program: never signal it
)

func (s procStatus) String() string {
	return [...]string{"gone", "running", "pid reused by another process"}[s]
}

// procInfo is what /proc says about one live process.
type procInfo struct {
	// startTime is when it started, in clock ticks after boot: with the pid, it names one process
	// for as long as the machine runs, where a pid alone can be reused.
	startTime uint64
	// cmdline is empty once an exiting process has released its memory, a moment before it
	// becomes a zombie.
	cmdline []string
}

// procReader is the part of /proc the control plane reads; tests replace it with fake pids.
type procReader interface {
	// process describes a live process, or returns an error wrapping fs.ErrNotExist if there is
	// none (a zombie counts as none: it has exited).
	process(pid int) (procInfo, error)
	// rss returns the resident set size of a live process, in bytes.
	rss(pid int) (int64, error)
}

// inspect tells whether c's process is still the one that was started: same start time (when
// recorded) and same command line, or, while it exits, same start time and no command line left.
func inspect(r procReader, c ComponentState) procStatus {
	if c.PID <= 0 {
		return procGone
	}
	info, err := r.process(c.PID)
	if err != nil {
		return procGone
	}
	sameStart := c.ProcStartTime != 0 && info.startTime == c.ProcStartTime
	switch {
	case c.ProcStartTime != 0 && !sameStart:
		return procForeign
	case slices.Equal(info.cmdline, c.Args):
		return procOurs
	case sameStart && len(info.cmdline) == 0:
		return procOurs // exiting: it still holds its files and ports
	default:
		return procForeign
	}
}

// procfs reads the real /proc.
type procfs struct{}

func (procfs) process(pid int) (procInfo, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, err
	}
	// The fields after the command name, which is in parentheses and may itself hold ") ":
	// state is field 3 of proc(5), starttime field 22.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return procInfo{}, fmt.Errorf("parse /proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	if state := fields[0]; state == "Z" || state == "X" {
		return procInfo{}, fmt.Errorf("process %d has exited: %w", pid, fs.ErrNotExist)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procInfo{}, fmt.Errorf("parse start time in /proc/%d/stat: %w", pid, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return procInfo{}, err
	}
	var cmdline []string
	if len(b) > 0 {
		cmdline = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	}
	return procInfo{startTime: start, cmdline: cmdline}, nil
}

func (procfs) rss(pid int) (int64, error) {
	rss, err := ReadKiB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS")
	if err != nil {
		return 0, fmt.Errorf("RSS of process %d (a kernel thread has none): %w", pid, err)
	}
	return rss, nil
}

// stopGracePeriod is how long a component gets to exit after SIGTERM before SIGKILL. The apiserver
// runs with no shutdown delay and exits in about a second; etcd in less.
const stopGracePeriod = 15 * time.Second

// exitPollInterval paces the wait for a process to exit. A process that is not our child (one a
// previous `fakelet controlplane up` started) sends us no event when it exits, so we look.
const exitPollInterval = 50 * time.Millisecond

// stopComponent stops c's process: SIGTERM to its process group, then SIGKILL after grace. It
// signals nothing unless the pid still runs the command line that was started. It returns once the
// process is gone.
func stopComponent(ctx context.Context, r procReader, c ComponentState, grace time.Duration) error {
	switch inspect(r, c) {
	case procGone, procForeign:
		return nil
	}
	if err := signalGroup(c.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop %s (pid %d): %w", c.Name, c.PID, err)
	}
	if waitGone(ctx, r, c, grace) {
		return nil
	}
	if inspect(r, c) == procOurs {
		if err := signalGroup(c.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill %s (pid %d) after %s: %w", c.Name, c.PID, grace, err)
		}
	}
	if !waitGone(ctx, r, c, grace) {
		return fmt.Errorf("kill %s (pid %d): still running %s after SIGKILL", c.Name, c.PID, grace)
	}
	return nil
}

// signalGroup signals the process group pid leads (startDetached makes each component a group
// leader), so anything a component may have forked goes too.
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // exited meanwhile
	}
	return err
}

// waitGone waits up to timeout for c's process to be gone; false if it is still there.
func waitGone(ctx context.Context, r procReader, c ComponentState, timeout time.Duration) bool {
	// The wall clock: a real process takes its signal and exits on it.
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(exitPollInterval)
	defer tick.Stop()
	for inspect(r, c) == procOurs {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
	return true
}

// logTailLines is how much of a failed component's log an error carries: enough for the fatal
// error and what led to it.
const logTailLines = 20

// logTail returns the last n lines of a log file, or a note saying why there are none.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const window = 64 << 10 // 20 lines of even the chattiest component fit
	if st, err := f.Stat(); err == nil && st.Size() > window {
		if _, err := f.Seek(-window, io.SeekEnd); err != nil {
			return fmt.Sprintf("(read log: %v)", err)
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
