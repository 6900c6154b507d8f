package compare

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/scrape"
	"fakelet.dev/fakelet/measure/source"
)

// Cluster is the cluster one mode is measured on.
type Cluster struct {
	Client   kubernetes.Interface
	NewFleet func(fleet.Resolved) (*fleet.Fleet, error)
	Sources  []scrape.Source
	Target   record.Target
}

// ClusterOf is the cluster cfg reaches, with every metrics endpoint it has: all of local's, the
// control plane fakelet runs (nil for another cluster), else the apiserver's.
func ClusterOf(cfg *rest.Config, local *controlplane.ControlPlane, description string) (*Cluster, error) {
	sources, err := source.Target(cfg, local)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return &Cluster{
		Client:   client,
		NewFleet: func(c fleet.Resolved) (*fleet.Fleet, error) { return fleet.New(c, cfg) },
		Sources:  sources,
		Target:   record.Target{Server: cfg.Host, Description: description, Local: local != nil},
	}, nil
}

// freshCluster starts a fresh local control plane in dir with up; release stops it.
func freshCluster(ctx context.Context, log io.Writer, up func(context.Context, string) (*controlplane.ControlPlane, error), dir string) (*Cluster, func(), error) {
	fmt.Fprintf(log, "starting a fresh control plane in %s\n", dir)
	cp, err := up(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		if err := cp.Down(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(log, "stop the control plane in %s: %v\n", dir, err)
		}
	}
	cl, err := ClusterOf(cp.AdminConfig(), cp, fmt.Sprintf("%s (local control plane in %s)", cp.APIServerURL, cp.Dir))
	if err != nil {
		release()
		return nil, nil, err
	}
	return cl, release, nil
}
