package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startSleeper starts a detached process that lives until stopped, as a stand-in component.
func startSleeper(t *testing.T, script string) (ComponentState, *process) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	args := []string{sh, "-c", script}
	logFile := filepath.Join(t.TempDir(), "sleeper.log")
	p, err := startDetached(args, logFile, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.exited
	})
	info, err := (procfs{}).process(p.pid)
	if err != nil {
		t.Fatal(err)
	}
	return ComponentState{Name: "sleeper", PID: p.pid, Args: args, Log: logFile, ProcStartTime: info.startTime}, p
}

// waitStarted waits for the sleeper's first log line: until then its command line may still be
// that of the forked Go process.
func waitStarted(t *testing.T, c ComponentState) {
	t.Helper()
	for i := 0; inspect(procfs{}, c) != procOurs; i++ {
		if i > 200 {
			t.Fatalf("process %d never ran %v", c.PID, c.Args)
		}
		time.Sleep(10 * time.Millisecond) // exec has no event to wait on
	}
}

func TestStartDetached(t *testing.T) {
	c, p := startSleeper(t, "echo started; sleep 60 & wait")
	waitStarted(t, c)
	pgid, err := syscall.Getpgid(p.pid)
	if err != nil || pgid != p.pid {
		t.Errorf("pgid = %d, %v; want its own group %d", pgid, err, p.pid)
	}
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(p.pid), 0, 0)
	if errno != 0 || int(sid) != p.pid {
		t.Errorf("sid = %d (%v), want its own session %d", sid, errno, p.pid)
	}
	if rss, err := (procfs{}).rss(p.pid); err != nil || rss <= 0 {
		t.Errorf("rss = %d, %v", rss, err)
	}
}

func TestStopComponent(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		recorded func(ComponentState) ComponentState
		grace    time.Duration
		wantGone bool
	}{
		{name: "exits on SIGTERM", script: "sleep 60 & wait", grace: 10 * time.Second, wantGone: true},
		{name: "ignores SIGTERM, gets SIGKILL", script: `trap "" TERM; echo ready; sleep 60 & wait`, grace: 200 * time.Millisecond, wantGone: true},
		{
			name: "pid runs something else: left alone", script: "sleep 60 & wait", grace: time.Second,
			recorded: func(c ComponentState) ComponentState {
				c.Args = []string{"/usr/local/bin/etcd", "--name=fakelet"}
				c.ProcStartTime = 0
				return c
			},
			wantGone: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, p := startSleeper(t, tt.script)
			waitStarted(t, c)
			if strings.Contains(tt.script, "echo ready") {
				waitLog(t, c.Log, "ready") // the trap is set once it says so
			}
			recorded := c
			if tt.recorded != nil {
				recorded = tt.recorded(c)
			}
			if err := stopComponent(context.Background(), procfs{}, recorded, tt.grace); err != nil {
				t.Fatal(err)
			}
			if !tt.wantGone {
				if got := inspect(procfs{}, c); got != procOurs {
					t.Fatalf("stopComponent touched a process whose command line differs from the recorded one: now %v", got)
				}
				return
			}
			// stopComponent returns once /proc shows it exited; the reaper sees it a moment later.
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				t.Fatal("the process was not reaped 5 s after stopComponent returned")
			}
		})
	}
}

func waitLog(t *testing.T, path, want string) {
	t.Helper()
	for i := 0; !strings.Contains(logTail(path, 5), want); i++ {
		if i > 200 {
			t.Fatalf("%s never said %q", path, want)
		}
		time.Sleep(10 * time.Millisecond) // a log line has no event to wait on
	}
}

func TestProcfsZombieIsGone(t *testing.T) {
	exited := make(chan os.Signal, 1)
	signal.Notify(exited, syscall.SIGCHLD)
	defer signal.Stop(exited)
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer cmd.Wait()
	// Until it has exited and, unwaited, is a zombie: a SIGCHLD may be another test's child's.
	for {
		<-exited
		if _, err := (procfs{}).process(cmd.Process.Pid); err != nil {
			break
		}
	}
	args := []string{cmd.Path}
	if got := inspect(procfs{}, ComponentState{PID: cmd.Process.Pid, Args: args}); got != procGone {
		t.Errorf("inspect(zombie) = %v, want %v", got, procGone)
	}
}

func TestLogTail(t *testing.T) {
	dir := privateTempDir(t)
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	path := filepath.Join(dir, "x.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		path      string
		n         int
		wantFirst string
		wantLines int
	}{
		{"last 20 of 30", path, 20, "line 11", 20},
		{"more than there are", path, 50, "line 1", 30},
		{"missing log", filepath.Join(dir, "none.log"), 20, "(no log:", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := logTail(tt.path, tt.n)
			lines := strings.Split(got, "\n")
			if !strings.HasPrefix(lines[0], tt.wantFirst) || len(lines) != tt.wantLines {
				t.Errorf("logTail = %q, want %d lines from %q", got, tt.wantLines, tt.wantFirst)
			}
		})
	}
}
