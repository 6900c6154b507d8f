package controlplane

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// Faults for reliability tests: one component of a running control plane crashes and comes back,
// as systemd or a kubelet would bring it back on a real control plane node. The component comes back
// with the command line it was started with, so on the same ports with the same data and flags:
// clients need no new configuration, only their retries.

// KillComponent kills the named component (Etcd, APIServer, ControllerManager or Scheduler) of the control plane
// in dir with SIGKILL, as a crash: no graceful shutdown, connections reset. It returns once the process
// is gone. The state keeps the component, so StartComponent can bring it back and Down still works.
func KillComponent(ctx context.Context, dir, name string) error {
	dir, err := checkedDir(dir)
	if err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	_, c, err := recordedComponent(dir, name)
	if err != nil {
		return err
	}
	if s := inspect(procfs{}, c); s != procOurs {
		return fmt.Errorf("kill %s in %s: pid %d is %s", name, dir, c.PID, s)
	}
	if err := signalGroup(c.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s (pid %d): %w", name, c.PID, err)
	}
	if !waitGone(ctx, procfs{}, c, stopGracePeriod) {
		return fmt.Errorf("kill %s (pid %d): still running %s after SIGKILL", name, c.PID, stopGracePeriod)
	}
	return nil
}

// StartComponent starts the named component of the control plane in dir again, with the command line
// recorded when Up started it (same ports, data and flags), waits until it is healthy and records its
// new pid. It refuses if the component still runs.
func StartComponent(ctx context.Context, dir, name string) (ComponentState, error) {
	return startRecorded(ctx, dir, name, DefaultStartTimeout, false)
}

// RestartComponent kills the named component (KillComponent) and starts it again (StartComponent).
func RestartComponent(ctx context.Context, dir, name string) (ComponentState, error) {
	if err := KillComponent(ctx, dir, name); err != nil {
		return ComponentState{}, err
	}
	return StartComponent(ctx, dir, name)
}

// RestartComponent restarts one of cp's components (see the package-level RestartComponent) and
// updates what cp.State reports. cp must not be used from other goroutines meanwhile.
func (cp *ControlPlane) RestartComponent(ctx context.Context, name string) error {
	c, err := RestartComponent(ctx, cp.Dir, name)
	if err != nil {
		return err
	}
	cp.state.setComponent(c)
	return nil
}

func startRecorded(ctx context.Context, dir, name string, timeout time.Duration, dieWithParent bool) (ComponentState, error) {
	dir, err := checkedDir(dir)
	if err != nil {
		return ComponentState{}, err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return ComponentState{}, err
	}
	defer unlock()
	st, c, err := recordedComponent(dir, name)
	if err != nil {
		return c, err
	}
	if s := inspect(procfs{}, c); s == procOurs {
		return c, fmt.Errorf("start %s in %s: it still runs (pid %d)", name, dir, c.PID)
	}
	client, err := dirHTTPClient(dir)
	if err != nil {
		return c, err
	}
	defer client.CloseIdleConnections()
	started := time.Now() // wall time, for the progress line's duration
	p, err := startDetached(c.Args, c.Log, dieWithParent)
	if err != nil {
		return c, err
	}
	c.PID, c.StartedAt, c.ProcStartTime = p.pid, started.UTC(), 0
	if info, err := (procfs{}).process(p.pid); err == nil {
		c.ProcStartTime = info.startTime
	}
	st.setComponent(c)
	if err := writeState(dir, st); err != nil {
		return c, err
	}
	if err := waitHealthy(ctx, client, c.HealthURL, p, timeout); err != nil {
		return c, fmt.Errorf("restart %s (pid %d): %w\nlast lines of %s:\n%s", name, c.PID, err, c.Log, logTail(c.Log, logTailLines))
	}
	return c, nil
}

// recordedComponent reads the state in dir and the named component in it.
func recordedComponent(dir, name string) (*State, ComponentState, error) {
	if !slices.Contains(componentOrder, name) {
		return nil, ComponentState{}, fmt.Errorf("no component %q (want one of %v)", name, componentOrder)
	}
	st, err := readState(dir)
	if err != nil {
		return nil, ComponentState{}, err
	}
	c, ok := st.Component(name)
	if !ok {
		return nil, ComponentState{}, fmt.Errorf("control plane in %s has no %s recorded", dir, name)
	}
	return st, c, nil
}
