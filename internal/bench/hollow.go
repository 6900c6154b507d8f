package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// A hollow node is one kubemark process in --morph=kubelet: the real kubelet code over kubemark's
// fake runtime, image service, cadvisor and container manager. Each runs in a work directory of its
// own (its log, its kubeconfig holding a system:node certificate of its own, and TMPDIR for its
// runtime's socket), and dies with the process that started it. kubemark makes the kubelet's root
// directory under /tmp whatever TMPDIR says (test/utils.MakeTempDirOrDie); the reference removes
// each one its processes logged once the process is gone.

// hollowNode is one hollow kubelet the reference started.
type hollowNode struct {
	name, dir  string
	kubemark   string
	kubeconfig string
	port       int // the kubelet's --kubelet-port, picked free once and kept across restarts
	cmd        *exec.Cmd
	done       chan struct{} // closed when cmd has exited
	logFrom    int64         // the size of kubemark.log when cmd started: its own lines follow
}

func (h *hollowNode) logPath() string { return filepath.Join(h.dir, "kubemark.log") }

func newHollowNode(kubemark, dir, name, kubeconfig string) (*hollowNode, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &hollowNode{name: name, dir: dir, kubemark: kubemark, kubeconfig: kubeconfig, port: port}, nil
}

// start starts the kubelet, its output appended to DIR/kubemark.log.
func (h *hollowNode) start() error {
	tmp := filepath.Join(h.dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("hollow node %s: %w", h.name, err)
	}
	log, err := os.OpenFile(h.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("hollow node %s: %w", h.name, err)
	}
	defer log.Close()
	st, err := log.Stat()
	if err != nil {
		return fmt.Errorf("hollow node %s: %w", h.name, err)
	}
	h.logFrom = st.Size()
	cmd := exec.Command(h.kubemark,
		"--morph=kubelet",
		"--name="+h.name,
		"--kubeconfig="+h.kubeconfig,
		// kubemark's fake image service: there is no containerd to ask.
		"--use-host-image-service=false",
		"--kubelet-port="+strconv.Itoa(h.port),
		"--kubelet-read-only-port=0",
	)
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = log, log
	// Killed with the reference's process, so that a crash leaves no kubelet heartbeating.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start hollow node %s: %w", h.name, err)
	}
	h.cmd, h.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(h.done)
	return nil
}

// exited says whether the started process has exited, and how.
func (h *hollowNode) exited() (bool, string) {
	if h.cmd == nil {
		return false, ""
	}
	select {
	case <-h.done:
		return true, h.cmd.ProcessState.String()
	default:
		return false, ""
	}
}

// kill ends the kubelet at once, as a crash or an OOM kill would, and waits for it to be gone.
func (h *hollowNode) kill() error {
	if h.cmd == nil {
		return nil
	}
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill hollow node %s: %w", h.name, err)
	}
	select {
	case <-h.done:
		h.cmd = nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("hollow node %s (pid %d) still running 10 s after SIGKILL", h.name, h.cmd.Process.Pid)
	}
	return h.removeRootDir()
}

// rootDirLine is how kubemark logs the root directory it made (pkg/kubemark/hollow_kubelet.go).
var rootDirLine = regexp.MustCompile(`Using (/tmp/hollow-kubelet\.[0-9]+) as root dir for hollow-kubelet`)

// removeRootDir removes the root directory the process that just ended logged making.
func (h *hollowNode) removeRootDir() error {
	f, err := os.Open(h.logPath())
	if err != nil {
		return fmt.Errorf("hollow node %s: %w", h.name, err)
	}
	defer f.Close()
	if _, err := f.Seek(h.logFrom, io.SeekStart); err != nil {
		return fmt.Errorf("hollow node %s: %w", h.name, err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if m := rootDirLine.FindSubmatch(sc.Bytes()); m != nil {
			return os.RemoveAll(string(m[1]))
		}
	}
	return sc.Err()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
