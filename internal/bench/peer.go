package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"fakelet.dev/fakelet/internal/pause"
)

// Peer is another fake kubelet that keeps the fleet's Nodes after fakelet's window, on the same
// control plane, so that both are measured against the same objects and the same apiserver.
type Peer struct {
	Name   string // its key in PeerResult.CPU and RSS, and its column in the table
	Binary string
	// Args returns its command line for the control plane of kubeconfig; it may write its
	// configuration under dir.
	Args func(kubeconfig, dir string) ([]string, error)
	Env  []string // added to this process's environment
}

// PeerResult is the peer's steady window, measured as fakelet's was.
type PeerResult struct {
	Name     string
	HandOver time.Duration // from fakelet's stop until the peer held every Lease and every Node was Ready
	Window   time.Duration
	CPU      map[string]time.Duration // by process: the peer's Name and the control plane's
	RSS      map[string]int64
	// LeasePUTs and LeasePUTp99 are as the apiserver counted them.
	LeasePUTs   float64
	LeasePUTp99 float64
	Err         string // why the peer's window is missing, if it is
}

// peerRun is one peer's turn on a control plane whose fleet has stopped and left its Nodes and Leases.
type peerRun struct {
	peer       Peer
	kubeconfig string
	dir        string
	pids       map[string]int // the control plane's processes; the peer's is added
	cpus       unix.CPUSet    // where the peer runs, as the fleet it is compared with
	// snapshot reads the processes' CPU and memory and the apiserver's metrics.
	snapshot func(pids map[string]int) (snap, error)
	// handedOver reports whether the peer holds every Lease and every Node is Ready.
	handedOver     func(ctx context.Context) (bool, error)
	poll           time.Duration
	handOverWithin time.Duration
	settle, steady time.Duration
	log            io.Writer
}

// run starts the peer, waits until it has taken the Nodes over, measures its window and stops it.
func (r peerRun) run(ctx context.Context) (PeerResult, error) {
	res := PeerResult{Name: r.peer.Name, CPU: map[string]time.Duration{}, RSS: map[string]int64{}}
	args, err := r.peer.Args(r.kubeconfig, r.dir)
	if err != nil {
		return res, fmt.Errorf("%s: %w", r.peer.Name, err)
	}
	logPath := filepath.Join(r.dir, r.peer.Name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return res, err
	}
	defer logFile.Close()
	child := exec.Command(r.peer.Binary, args...)
	child.Env = append(os.Environ(), r.peer.Env...)
	child.Stdout, child.Stderr = logFile, logFile
	began := time.Now()
	if err := onCPUs(r.cpus, child.Start); err != nil {
		return res, fmt.Errorf("start %s: %w", r.peer.Name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	defer stopPeer(child, exited, r.log, r.peer.Name)

	pids := map[string]int{r.peer.Name: child.Process.Pid}
	for name, pid := range r.pids {
		pids[name] = pid
	}
	// alive fails the run if the peer has exited, with the end of its log to say why.
	alive := func() error {
		select {
		case err := <-exited:
			exited <- err // for stopPeer
			return fmt.Errorf("%s exited (%v) before its window ended; the end of %s:\n%s", r.peer.Name, err, logPath, tail(logPath, 2048))
		default:
			return nil
		}
	}

	fmt.Fprintf(r.log, "   %s: waiting for it to hold every Lease and every Node to be Ready\n", r.peer.Name)
	deadline := began.Add(r.handOverWithin)
	for {
		if err := alive(); err != nil {
			return res, err
		}
		done, err := r.handedOver(ctx)
		if err != nil {
			fmt.Fprintf(r.log, "   %s: check the hand-over: %v\n", r.peer.Name, err)
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("%s did not hold every Lease with every Node Ready within %v; see %s", r.peer.Name, r.handOverWithin, logPath)
		}
		if err := pause.For(ctx, r.poll); err != nil {
			return res, err
		}
	}
	res.HandOver = time.Since(began)
	fmt.Fprintf(r.log, "   %s: took the Nodes over in %v; settling %v, then measuring %v\n", r.peer.Name, res.HandOver.Round(time.Second), r.settle, r.steady)
	if err := pause.For(ctx, r.settle); err != nil {
		return res, err
	}
	before, err := r.snapshot(pids)
	if err != nil {
		return res, err
	}
	if err := pause.For(ctx, r.steady); err != nil {
		return res, err
	}
	after, err := r.snapshot(pids)
	if err != nil {
		return res, err
	}
	if err := alive(); err != nil {
		return res, err
	}
	res.Window = after.at.Sub(before.at)
	for name := range pids {
		res.CPU[name] = after.cpu[name] - before.cpu[name]
		res.RSS[name] = after.rss[name]
	}
	res.LeasePUTs, res.LeasePUTp99 = leasePUTs(before.apiserver, after.apiserver)
	fmt.Fprintf(r.log, "   %s %.1fs CPU, %.0f lease PUTs\n", r.peer.Name, res.CPU[r.peer.Name].Seconds(), res.LeasePUTs)
	return res, nil
}

// stopPeer ends the peer with SIGTERM, then SIGKILL if it has not exited within 30 s.
func stopPeer(child *exec.Cmd, exited chan error, log io.Writer, name string) {
	_ = child.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		fmt.Fprintf(log, "   %s did not exit within 30s of SIGTERM: killing it\n", name)
		_ = child.Process.Kill()
		<-exited
	}
}

// tail returns up to the last n bytes of the file at path.
func tail(path string, n int64) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if int64(len(raw)) > n {
		raw = raw[int64(len(raw))-n:]
	}
	return string(bytes.TrimSpace(raw))
}
