package bench

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// A hollow node is one kubemark process in --morph=kubelet: the real kubelet code over kubemark's
// fake runtime, image service, cadvisor and container manager. Each runs in a work directory of its
// own (its root directory and runtime socket are temporary directories, made under TMPDIR), with a
// kubeconfig holding a system:node certificate of its own, and dies with the process that started it.

// hollowNode is one hollow kubelet the reference started.
type hollowNode struct {
	name, dir  string
	kubemark   string
	kubeconfig string
	port       int // the kubelet's --kubelet-port, picked free once and kept across restarts
	cmd        *exec.Cmd
	done       chan struct{} // closed when cmd has exited
}

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
	log, err := os.OpenFile(filepath.Join(h.dir, "kubemark.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("hollow node %s: %w", h.name, err)
	}
	defer log.Close()
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
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("hollow node %s (pid %d) still running 10 s after SIGKILL", h.name, h.cmd.Process.Pid)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
