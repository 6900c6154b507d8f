// Package e2e runs fakelet against a real local control plane (etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler from `make controlplane`). The tests are skipped under
// -short and fail, not skip, when the binaries are missing: `make test` builds them first.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"fakelet.dev/fakelet/controlplane"
)

// gracePeriod shortens the node lifecycle controller's --node-monitor-grace-period (50 s upstream)
// so that reaction tests take seconds, not minutes.
const gracePeriod = 20 * time.Second

var (
	shared     *controlplane.ControlPlane
	sharedErr  error
	sharedOnce sync.Once
	sharedDir  string
)

func TestMain(m *testing.M) {
	klog.LogToStderr(false) // client-go's own warnings about canceled watches drown the test output
	dir, err := os.MkdirTemp("", "fakelet-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedDir = filepath.Join(dir, "controlplane")
	code := m.Run()
	for _, cp := range []*controlplane.ControlPlane{shared, defaults} {
		if cp == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := cp.Down(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "stop the control plane in %s: %v\n", cp.Dir, err)
		}
		cancel()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// controlPlane returns the control plane the tests of this package share, starting it on first use.
func controlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs a real control plane; skipped under -short")
	}
	sharedOnce.Do(func() {
		if _, err := controlplane.FindBinaries(""); err != nil {
			sharedErr = fmt.Errorf("end-to-end tests need the control plane binaries (make controlplane): %w", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared, sharedErr = controlplane.Up(ctx, controlplane.Options{
			Dir: sharedDir,
			ControllerManagerArgs: []string{
				"--node-monitor-grace-period=" + gracePeriod.String(),
			},
		})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func admin(t *testing.T, cp *controlplane.ControlPlane) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
