package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Down stops the control plane: see the package-level Down.
func (cp *ControlPlane) Down(ctx context.Context) error { return Down(ctx, cp.Dir) }

// Down stops the control plane recorded in dir, whether healthy, partly dead or left from a crash:
// each component still running the command line that was started gets SIGTERM, and SIGKILL if it has
// not exited after a grace period. Then it removes the state, the kubeconfigs and, unless the control
// plane was started with KeepData, etcd's data. Logs stay for a post-mortem. With nothing recorded in
// dir, Down does nothing.
func Down(ctx context.Context, dir string) error {
	dir, err := checkedDir(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(dir)
	if errors.Is(err, errNoState) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop control plane in %s: %w", dir, err)
	}
	if err := stopAll(ctx, dir, st); err != nil {
		return fmt.Errorf("stop control plane in %s: %w", dir, err)
	}
	return nil
}

// stopAll stops st's components, last started first (the controller manager before the apiserver it
// talks to, the apiserver before its etcd), then removes what Down removes. The state stays if a
// component could not be stopped, so that a later Down or Up can try again.
func stopAll(ctx context.Context, dir string, st *State) error {
	var errs []error
	for _, c := range slices.Backward(st.Components) {
		if err := stopComponent(ctx, procfs{}, c, stopGracePeriod); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, p := range []string{KubeconfigPath(dir), controllerManagerKubeconfig(dir), schedulerKubeconfig(dir)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove kubeconfig: %w", err))
		}
	}
	if !st.KeepData {
		if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
			errs = append(errs, fmt.Errorf("remove etcd data: %w", err))
		}
		if err := removePrometheusData(dir); err != nil {
			errs = append(errs, err)
		}
	}
	// Its users are no one's now: one still attached finds the state gone, or another's, at Leave.
	if err := os.RemoveAll(usersDir(dir)); err != nil {
		errs = append(errs, fmt.Errorf("remove users: %w", err))
	}
	if err := removeState(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
