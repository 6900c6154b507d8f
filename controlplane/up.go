package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Options configure Up.
type Options struct {
	// Dir holds everything of this control plane; DefaultDir if empty. Two control planes in two
	// directories never share a port.
	Dir string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler; see
	// FindBinaries for where they are looked for when it is empty.
	BinDir string
	// Extra arguments, appended to each component's command line after the defaults.
	EtcdArgs, APIServerArgs, ControllerManagerArgs, SchedulerArgs []string
	// KeepData keeps etcd's data and the PKI from the previous control plane in Dir. By default each
	// Up starts from an empty etcd, so one run's objects never leak into the next.
	KeepData bool
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
	// StartTimeout bounds the wait for each component to become healthy; DefaultStartTimeout if 0.
	StartTimeout time.Duration
	// UntilLastUser counts the caller as a user of the control plane until ControlPlane.Leave, and
	// marks one that this Up starts to be stopped by its last user's Leave (what a run does). Without
	// it, a control plane Up starts stays up until Down.
	UntilLastUser bool
	// Prometheus, if set, also starts a Prometheus server that scrapes the control plane and
	// fakelet (see StartPrometheus). Up fails before starting anything if there is no prometheus.
	Prometheus *PrometheusOptions
	// AuditNodes makes the apiserver write an audit log of the requests of kubelet and admin
	// credentials at Metadata level to AuditLogPath(Dir) (audit.go). Off by default: it costs the
	// apiserver a write per request. A control plane already up without it is not reused.
	AuditNodes bool

	// dieWithParent makes the components die with the process that started them (tests).
	dieWithParent bool
}

func (o Options) extraArgs() map[string][]string {
	m := map[string][]string{}
	for name, args := range map[string][]string{Etcd: o.EtcdArgs, APIServer: o.APIServerArgs, ControllerManager: o.ControllerManagerArgs, Scheduler: o.SchedulerArgs} {
		if len(args) > 0 {
			m[name] = args
		}
	}
	return m
}

// startAttempts is how often a component is started when another process takes a port between
// freePorts and the component's own listen. Once is rare; three times in a row means something else.
const startAttempts = 3

// Up starts a control plane in opts.Dir and waits until the apiserver and the scheduler are ready
// and the controller manager healthy. If a healthy control plane started with the same extra arguments already runs
// there, Up returns it. If one was left behind by a crash (some process dead or unhealthy), Up stops
// what is left of it and starts afresh. On failure, Up stops what it started and returns an error
// with the last lines of the failing component's log.
func Up(ctx context.Context, opts Options) (*ControlPlane, error) {
	begin := time.Now() // wall time, for the progress lines' durations
	dir, err := absDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if opts.Prometheus != nil {
		if _, err := FindPrometheus(opts.Prometheus.Binary); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create control plane directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	unlock, err := waitLockDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if opts.AuditNodes {
		// As extra arguments, so that reuseOrClean reuses only a control plane that audits.
		args, err := auditArgs(dir)
		if err != nil {
			return nil, err
		}
		opts.APIServerArgs = append(slices.Clip(opts.APIServerArgs), args...)
	}

	if cp, err := reuseOrClean(ctx, dir, opts, progress); cp != nil || err != nil {
		if err == nil {
			err = cp.upPrometheus(ctx, opts, progress)
		}
		if err == nil && opts.UntilLastUser {
			cp.userFile, err = addUser(dir, procfs{})
		}
		if err != nil {
			return nil, err
		}
		return cp, nil
	}
	// Users of a control plane that is gone are no one's.
	if err := os.RemoveAll(usersDir(dir)); err != nil {
		return nil, fmt.Errorf("remove users of the previous control plane in %s: %w", dir, err)
	}
	bins, err := FindBinaries(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if err := keepPreviousAuditLog(dir); err != nil {
		return nil, err
	}
	if !opts.KeepData {
		if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
			return nil, fmt.Errorf("remove old etcd data: %w", err)
		}
	}
	pki, _, err := ensurePKI(dir, opts.KeepData)
	if err != nil {
		return nil, fmt.Errorf("create PKI in %s: %w", dir, err)
	}
	s := &starter{
		ctx: ctx, dir: dir, opts: opts, progress: progress, bins: bins, pki: pki,
		state: &State{Version: stateVersion, StartedAt: begin.UTC(), ExtraArgs: opts.extraArgs(), KeepData: opts.KeepData,
			UntilLastUser: opts.UntilLastUser},
	}
	cp, err := s.start()
	if err == nil {
		err = cp.upPrometheus(ctx, opts, progress)
	}
	if err == nil && opts.UntilLastUser {
		cp.userFile, err = addUser(dir, procfs{})
	}
	if err == nil && opts.UntilLastUser && !opts.dieWithParent {
		// Tests' components die with them: no user outlives them for a watchdog to wait on.
		err = startWatchdog(dir)
	}
	if err != nil {
		// Stop with a fresh context: ctx may be what ended the start.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*stopGracePeriod)
		defer cancel()
		if stopErr := stopAll(stopCtx, dir, s.state); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, fmt.Errorf("start control plane in %s: %w", dir, err)
	}
	fmt.Fprintf(progress, "control plane up in %s\n", time.Since(begin).Round(10*time.Millisecond))
	return cp, nil
}

// reuseOrClean deals with a control plane recorded in dir: it returns it if healthy and started with
// the same extra arguments, stops what is left of it if not, and returns nil, nil when Up should
// start a new one.
func reuseOrClean(ctx context.Context, dir string, opts Options, progress io.Writer) (*ControlPlane, error) {
	prev, err := readState(dir)
	if errors.Is(err, errNoState) {
		return nil, nil
	}
	if err != nil {
		// Without a readable state there are no pids to stop; new ports keep a new control plane
		// clear of anything still running.
		fmt.Fprintf(progress, "ignoring unreadable state (%v); anything it described is left running\n", err)
		return nil, removeState(dir)
	}
	a := assess(ctx, prev, procfs{}, healthChecker(dir))
	if a.healthy {
		if !sameArgs(prev.ExtraArgs, opts.extraArgs()) {
			return nil, fmt.Errorf("control plane in %s is already up with other extra arguments (%s; now asked for %s); run `fakelet controlplane down --controlplane-dir %s` first",
				dir, describeArgs(prev.ExtraArgs), describeArgs(opts.extraArgs()), dir)
		}
		fmt.Fprintf(progress, "control plane in %s is already up (since %s); reusing it\n", dir, prev.StartedAt.Local().Format(time.DateTime))
		return newControlPlane(dir, prev)
	}
	fmt.Fprintf(progress, "found a stale control plane in %s (%s); stopping %d leftover process(es) and starting afresh\n",
		dir, a, len(a.survivors))
	if err := stopAll(ctx, dir, prev); err != nil {
		return nil, fmt.Errorf("clean up stale control plane in %s: %w", dir, err)
	}
	return nil, nil
}

func sameArgs(a, b map[string][]string) bool {
	for _, name := range componentOrder {
		if !slices.Equal(a[name], b[name]) {
			return false
		}
	}
	return true
}

func describeArgs(m map[string][]string) string {
	var parts []string
	for _, name := range componentOrder {
		if len(m[name]) > 0 {
			parts = append(parts, name+" "+strings.Join(m[name], " "))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// healthChecker probes a recorded component's health endpoint with the admin credentials in dir.
func healthChecker(dir string) func(context.Context, ComponentState) error {
	return func(ctx context.Context, c ComponentState) error {
		client, err := dirHTTPClient(dir)
		if err != nil {
			return err
		}
		defer client.CloseIdleConnections()
		return probe(ctx, client, c.HealthURL)
	}
}

// dirHTTPClient is the admin HTTP client for the control plane in dir.
func dirHTTPClient(dir string) (*http.Client, error) {
	pki := pkiPaths(dir)
	admin, err := readCredentials("", pki.CACert, pki.AdminCert, pki.AdminKey, AdminUser)
	if err != nil {
		return nil, err
	}
	return adminHTTPClient(admin)
}

// starter starts the components of one control plane in order, recording each in the state.
type starter struct {
	ctx      context.Context
	dir      string
	opts     Options
	progress io.Writer
	bins     Binaries
	pki      PKI
	state    *State
}

func (s *starter) start() (*ControlPlane, error) {
	caPEM, err := os.ReadFile(s.pki.CACert)
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	client, err := dirHTTPClient(s.dir)
	if err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()

	etcd, err := s.startComponent(Etcd, etcdPorts, client, func(ports []int) ComponentState {
		return etcdComponent(s.bins.Etcd, s.dir, s.pki, ports, s.opts.EtcdArgs)
	}, nil)
	if err != nil {
		return nil, err
	}
	etcdURL := loopbackURL("https", etcd.Ports["client"])

	_, err = s.startComponent(APIServer, 1, client, func(ports []int) ComponentState {
		return apiServerComponent(s.bins.APIServer, s.dir, s.pki, etcdURL, ports[0], s.opts.APIServerArgs)
	}, func(c ComponentState) error {
		// Written before the apiserver starts, so anyone watching DIR can follow it coming up.
		s.state.APIServerURL = loopbackURL("https", c.Ports["secure"])
		return s.writeKubeconfigs(s.state.APIServerURL, caPEM)
	})
	if err != nil {
		return nil, err
	}

	_, err = s.startComponent(ControllerManager, 1, client, func(ports []int) ComponentState {
		return controllerManagerComponent(s.bins.ControllerManager, s.dir, s.pki, ports[0], s.opts.ControllerManagerArgs)
	}, nil)
	if err != nil {
		return nil, err
	}

	_, err = s.startComponent(Scheduler, 1, client, func(ports []int) ComponentState {
		return schedulerComponent(s.bins.Scheduler, s.dir, s.pki, ports[0], s.opts.SchedulerArgs)
	}, nil)
	if err != nil {
		return nil, err
	}
	return newControlPlane(s.dir, s.state)
}

func (s *starter) writeKubeconfigs(server string, caPEM []byte) error {
	admin, err := readCredentials(server, s.pki.CACert, s.pki.AdminCert, s.pki.AdminKey, AdminUser)
	if err != nil {
		return err
	}
	if err := writeKubeconfig(KubeconfigPath(s.dir), admin); err != nil {
		return err
	}
	kcm, err := readCredentials(server, s.pki.CACert, s.pki.ControllerManagerClientCert, s.pki.ControllerManagerClientKey, kcmUser)
	if err != nil {
		return err
	}
	if err := writeKubeconfig(controllerManagerKubeconfig(s.dir), kcm); err != nil {
		return err
	}
	sched, err := readCredentials(server, s.pki.CACert, s.pki.SchedulerClientCert, s.pki.SchedulerClientKey, schedulerUser)
	if err != nil {
		return err
	}
	return writeKubeconfig(schedulerKubeconfig(s.dir), sched)
}

// startComponent starts one component on nPorts new ports and waits until it is healthy, retrying
// with other ports if it lost one to another process. beforeStart runs once the ports are known.
func (s *starter) startComponent(name string, nPorts int, client *http.Client,
	build func(ports []int) ComponentState, beforeStart func(ComponentState) error,
) (ComponentState, error) {
	log := logPath(s.dir, name)
	// The previous control plane's log is kept one generation: after a crash, it says why.
	if err := os.Rename(log, filepath.Join(s.dir, name+".previous.log")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return ComponentState{}, fmt.Errorf("keep previous log of %s: %w", name, err)
	}
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(nPorts)
		if err != nil {
			return ComponentState{}, fmt.Errorf("start %s: %w", name, err)
		}
		c := build(ports)
		if beforeStart != nil {
			if err := beforeStart(c); err != nil {
				return c, fmt.Errorf("start %s: %w", name, err)
			}
		}
		fmt.Fprintf(s.progress, "starting %s on 127.0.0.1 port(s) %v\n", name, ports)
		started := time.Now() // wall time, for the progress line's duration
		p, err := startDetached(c.Args, c.Log, s.opts.dieWithParent)
		if err != nil {
			return c, err
		}
		c.PID, c.StartedAt = p.pid, started.UTC()
		if info, err := (procfs{}).process(p.pid); err == nil {
			c.ProcStartTime = info.startTime
		} // else it has exited already, and waitHealthy says so
		s.state.setComponent(c)
		if err := writeState(s.dir, s.state); err != nil {
			return c, err
		}
		err = waitHealthy(s.ctx, client, c.HealthURL, p, s.opts.StartTimeout)
		if err == nil {
			fmt.Fprintf(s.progress, "%s healthy after %s (pid %d, log %s)\n", name, time.Since(started).Round(10*time.Millisecond), c.PID, c.Log)
			return c, nil
		}
		exited := errors.Is(err, errExited)
		if !exited {
			// Stop it now so that its last words are in the log we quote.
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 2*stopGracePeriod)
			stopComponent(stopCtx, procfs{}, c, stopGracePeriod)
			cancel()
		}
		if s.ctx.Err() != nil {
			// Interrupted: the log would only tell of the shutdown we caused.
			return c, fmt.Errorf("start %s: %w", name, context.Cause(s.ctx))
		}
		tail := logTail(c.Log, logTailLines)
		if exited && isPortInUse(tail) && attempt < startAttempts {
			fmt.Fprintf(s.progress, "%s lost a port to another process; retrying on new ports\n", name)
			continue
		}
		return c, fmt.Errorf("start %s (pid %d): %w\nlast lines of %s:\n%s", name, c.PID, err, c.Log, tail)
	}
}
