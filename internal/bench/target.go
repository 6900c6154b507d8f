package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/internal/pause"
	"fakelet.dev/fakelet/internal/standin"
)

// The targets a bench's fleets run against.
const (
	TargetLocal   = "local"    // a fresh local control plane for each fleet
	TargetStandIn = "stand-in" // the stand-in (internal/standin), in a process of its own, for each fleet
)

// StandIn is the key of the stand-in's process in Result.CPU and Result.RSS.
const StandIn = "stand-in"

// ParseTarget reads --target.
func ParseTarget(s string) (string, error) {
	switch s {
	case "", TargetLocal:
		return TargetLocal, nil
	case TargetStandIn:
		return TargetStandIn, nil
	}
	return "", fmt.Errorf("target %q: want %s or %s", s, TargetLocal, TargetStandIn)
}

// benchTarget is what one fleet runs against and how it is measured.
type benchTarget struct {
	server     string // the key of the server's process in pids
	kubeconfig string
	admin      *rest.Config
	metrics    *http.Client
	metricsURL string
	pids       map[string]int // the target's processes, by name
	// components are the local control plane's (none for the stand-in): a pods bench scrapes the
	// controller manager's and the scheduler's client metrics.
	components []controlplane.ComponentState
	env        []string // what the fleet's process needs in its environment to target it
	down       func()
}

// startTarget starts the target of one fleet in dir.
func startTarget(ctx context.Context, o Options, dir, what string) (*benchTarget, error) {
	if o.Target == TargetStandIn {
		fmt.Fprintf(o.Log, "%s: starting the stand-in (a benchmark target only) in %s\n", what, dir)
		return startStandIn(ctx, o, dir)
	}
	fmt.Fprintf(o.Log, "%s: starting a control plane in %s\n", what, dir)
	cp, err := controlplane.Up(ctx, controlplane.Options{
		Dir: dir, BinDir: o.BinDir, APIServerArgs: o.APIServerArgs,
		ControllerManagerArgs: o.ControllerManagerArgs, SchedulerArgs: o.SchedulerArgs,
	})
	if err != nil {
		return nil, err
	}
	down := func() {
		if err := cp.Down(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(o.Log, "stop control plane: %v\n", err)
		}
	}
	mc, err := cp.MetricsClient()
	if err != nil {
		down()
		return nil, err
	}
	t := &benchTarget{server: controlplane.APIServer, kubeconfig: cp.Kubeconfig, admin: cp.AdminConfig(), metrics: mc,
		metricsURL: cp.APIServerURL + "/metrics", pids: map[string]int{}, components: cp.State().Components, down: down}
	for _, c := range cp.State().Components {
		t.pids[c.Name] = c.PID
	}
	return t, nil
}

// standInStart bounds the wait for the stand-in's kubeconfig.
const standInStart = 30 * time.Second

// startStandIn runs `fakelet stand-in` as a process of its own, so that its CPU is not the fleet's,
// and waits for the kubeconfig it writes once it listens.
func startStandIn(ctx context.Context, o Options, dir string) (*benchTarget, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	_ = os.Remove(kubeconfig)
	logFile, err := os.Create(filepath.Join(dir, "stand-in.log"))
	if err != nil {
		return nil, err
	}
	child := exec.Command(o.Fakelet, "stand-in", "--kubeconfig", kubeconfig)
	child.Stdout, child.Stderr = logFile, logFile
	if err := child.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s stand-in: %w", o.Fakelet, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	down := func() {
		_ = child.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = child.Process.Kill()
			<-exited
		}
		logFile.Close()
	}
	deadline := time.Now().Add(standInStart)
	for {
		if _, err := os.Stat(kubeconfig); err == nil {
			break
		}
		select {
		case err := <-exited:
			logFile.Close()
			return nil, fmt.Errorf("the stand-in ended before it served (%v): see %s", err, logFile.Name())
		default:
		}
		if time.Now().After(deadline) {
			down()
			return nil, fmt.Errorf("the stand-in wrote no kubeconfig within %v: see %s", standInStart, logFile.Name())
		}
		if err := pause.For(ctx, 100*time.Millisecond); err != nil {
			down()
			return nil, err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err == nil && cfg.Host == "" {
		err = errors.New("no server")
	}
	var mc *http.Client
	if err == nil {
		mc, err = rest.HTTPClientFor(cfg)
	}
	if err != nil {
		down()
		return nil, fmt.Errorf("the stand-in's kubeconfig %s: %w", kubeconfig, err)
	}
	return &benchTarget{server: StandIn, kubeconfig: kubeconfig, admin: cfg, metrics: mc, metricsURL: cfg.Host + "/metrics",
		pids: map[string]int{StandIn: child.Process.Pid}, env: []string{standin.BenchEnv + "=" + standin.BenchEnvValue}, down: down}, nil
}
