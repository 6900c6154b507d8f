package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"fakelet.dev/fakelet/deploy"
)

// Prometheus is the optional fifth component: a Prometheus server on loopback that scrapes fakelet
// and the four others with deploy/prometheus/prometheus.yml. It is recorded in the state like the
// others, so Down stops it and Status shows it, but the control plane's health does not depend on it.
const Prometheus = "prometheus"

// PrometheusOptions configure the Prometheus server beside a control plane.
type PrometheusOptions struct {
	// Binary is the prometheus executable; empty looks for prometheus on $PATH (Debian's
	// package installs /usr/bin/prometheus).
	Binary string
	// FakeletTargets are the --metrics-addr of the fakelet processes to scrape; nil means
	// deploy.DefaultFakeletTarget.
	FakeletTargets []string
	// Args are extra prometheus flags, after the defaults.
	Args []string
	// StartTimeout bounds the wait for the server to become ready; DefaultStartTimeout if 0.
	StartTimeout time.Duration
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
	// FreshData starts the server on empty storage: a server running beside cp is stopped and the
	// time series stored before are removed, so that series of earlier runs (a restarted server
	// writes no staleness markers for them) do not show in queries for five minutes.
	FreshData bool

	dieWithParent bool
}

// PrometheusDir is where the Prometheus server of the control plane in dir keeps its configuration
// (prometheus.yml, rules.yml, targets/, tls/) and its data (data/).
func PrometheusDir(dir string) string { return filepath.Join(dir, "prometheus") }

// FindPrometheus returns the prometheus executable: bin if set, else prometheus on $PATH.
func FindPrometheus(bin string) (string, error) {
	if bin == "" {
		bin = "prometheus"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("find a Prometheus server: %w; install one (on Debian: apt-get install prometheus) or name it with --prometheus-bin", err)
	}
	return path, nil
}

// PrometheusURL is the base URL of the Prometheus server started beside cp, or "" if none was.
func (cp *ControlPlane) PrometheusURL() string {
	c, ok := cp.state.Component(Prometheus)
	if !ok {
		return ""
	}
	return loopbackURL("http", c.Ports["web"])
}

// WritePrometheusConfig writes deploy/prometheus's configuration for cp into outDir
// (PrometheusDir(cp.Dir) if empty): the targets are cp's components (and the Prometheus server
// started beside it, if any) and fakeletTargets (nil: deploy.DefaultFakeletTarget). It returns the
// path of prometheus.yml. A Prometheus server reading outDir picks changed targets up by itself.
func (cp *ControlPlane) WritePrometheusConfig(outDir string, fakeletTargets []string) (string, error) {
	if outDir == "" {
		outDir = PrometheusDir(cp.Dir)
	}
	self := ""
	if c, ok := cp.state.Component(Prometheus); ok && outDir == PrometheusDir(cp.Dir) {
		self = loopbackAddr(c.Ports["web"])
	}
	return writePrometheusConfig(cp.Dir, &cp.state, outDir, fakeletTargets, self)
}

func writePrometheusConfig(dir string, st *State, outDir string, fakeletTargets []string, self string) (string, error) {
	t := deploy.LocalTargets{Fakelet: fakeletTargets, Prometheus: self}
	for name, target := range map[string]*string{Etcd: &t.Etcd, APIServer: &t.APIServer, ControllerManager: &t.ControllerManager, Scheduler: &t.Scheduler} {
		c, ok := st.Component(name)
		if !ok {
			return "", fmt.Errorf("write Prometheus configuration: the control plane in %s has no %s", dir, name)
		}
		u, err := url.Parse(c.MetricsURL)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("write Prometheus configuration: metrics URL %q of %s: %v", c.MetricsURL, name, err)
		}
		*target = u.Host
	}
	pki := pkiPaths(dir)
	t.CACert, t.ClientCert, t.ClientKey = pki.CACert, pki.AdminCert, pki.AdminKey
	return deploy.WriteLocalPrometheus(outDir, t)
}

// StartPrometheus starts a Prometheus server on a free loopback port beside cp, scraping cp's
// components and opts.FakeletTargets, and records it in cp's state. If one already runs and is
// ready, it gets the new targets and keeps running. Down stops it.
func (cp *ControlPlane) StartPrometheus(ctx context.Context, opts PrometheusOptions) error {
	unlock, err := lockDir(cp.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	return cp.startPrometheusLocked(ctx, opts)
}

// startPrometheusLocked starts Prometheus beside cp and records it; the caller holds cp.Dir's lock.
func (cp *ControlPlane) startPrometheusLocked(ctx context.Context, opts PrometheusOptions) error {
	st, err := readState(cp.Dir)
	if err != nil {
		return err
	}
	if err := startPrometheus(ctx, cp.Dir, st, opts); err != nil {
		return err
	}
	cp.state = *st
	return nil
}

// StopPrometheus stops the Prometheus server beside cp, if one runs, and forgets it; its data stays
// until Down.
func (cp *ControlPlane) StopPrometheus(ctx context.Context) error {
	unlock, err := lockDir(cp.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(cp.Dir)
	if err != nil {
		return err
	}
	c, ok := st.Component(Prometheus)
	if !ok {
		return nil
	}
	if err := stopComponent(ctx, procfs{}, c, stopGracePeriod); err != nil {
		return err
	}
	st.Components = slices.DeleteFunc(st.Components, func(c ComponentState) bool { return c.Name == Prometheus })
	if err := writeState(cp.Dir, st); err != nil {
		return err
	}
	cp.state = *st
	return nil
}

// upPrometheus starts the Prometheus server Up was asked for, if any; Up holds dir's lock.
func (cp *ControlPlane) upPrometheus(ctx context.Context, opts Options, progress io.Writer) error {
	if opts.Prometheus == nil {
		return nil
	}
	popts := *opts.Prometheus
	if popts.Progress == nil {
		popts.Progress = progress
	}
	popts.dieWithParent = popts.dieWithParent || opts.dieWithParent
	return cp.startPrometheusLocked(ctx, popts)
}

// startPrometheus starts the Prometheus server of the control plane in dir and records it in st;
// the caller holds dir's lock.
func startPrometheus(ctx context.Context, dir string, st *State, opts PrometheusOptions) error {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	client, err := dirHTTPClient(dir)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	if c, ok := st.Component(Prometheus); ok {
		if inspect(procfs{}, c) == procOurs {
			if !opts.FreshData && probe(ctx, client, c.HealthURL) == nil {
				_, err := writePrometheusConfig(dir, st, PrometheusDir(dir), opts.FakeletTargets, loopbackAddr(c.Ports["web"]))
				fmt.Fprintf(progress, "%s already runs (pid %d); targets rewritten\n", Prometheus, c.PID)
				return err
			}
			if err := stopComponent(ctx, procfs{}, c, stopGracePeriod); err != nil {
				return err
			}
		}
	}
	bin, err := FindPrometheus(opts.Binary)
	if err != nil {
		return err
	}
	if opts.FreshData {
		if err := removePrometheusData(dir); err != nil {
			return err
		}
	}
	s := &starter{
		ctx: ctx, dir: dir, progress: progress, state: st,
		opts: Options{StartTimeout: opts.StartTimeout, dieWithParent: opts.dieWithParent},
	}
	_, err = s.startComponent(Prometheus, 1, client, func(ports []int) ComponentState {
		return prometheusComponent(bin, dir, ports[0], opts.Args)
	}, func(c ComponentState) error {
		_, err := writePrometheusConfig(dir, st, PrometheusDir(dir), opts.FakeletTargets, loopbackAddr(c.Ports["web"]))
		return err
	})
	return err
}

func prometheusComponent(bin, dir string, port int, extra []string) ComponentState {
	pdir := PrometheusDir(dir)
	url := loopbackURL("http", port)
	args := []string{bin,
		"--config.file=" + filepath.Join(pdir, deploy.ConfigFile),
		"--storage.tsdb.path=" + filepath.Join(pdir, "data"),
		"--web.listen-address=" + loopbackAddr(port),
	}
	return component(Prometheus, dir, append(args, extra...), map[string]int{"web": port}, url, "/-/ready")
}

func loopbackAddr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// isOptional tells components the control plane's health does not depend on.
func isOptional(name string) bool { return name == Prometheus }

// removePrometheusData removes the Prometheus server's time series, as Down removes etcd's data.
func removePrometheusData(dir string) error {
	if err := os.RemoveAll(filepath.Join(PrometheusDir(dir), "data")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove Prometheus data: %w", err)
	}
	return nil
}
