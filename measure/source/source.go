// Package source names the metrics endpoints of a run's target for the measurement to scrape: every
// component's of a local control plane, or the apiserver's of a cluster given by a kubeconfig. It
// stands between controlplane and measure/scrape, so that neither the scrapes nor the session know
// the local control plane.
package source

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/measure/scrape"
)

// Target returns every metrics endpoint a measurement can read on the cluster of restConfig:
// each component's of the local control plane local, or with none (a cluster given by a kubeconfig)
// the apiserver's.
func Target(restConfig *rest.Config, local *controlplane.ControlPlane) ([]scrape.Source, error) {
	if local != nil {
		return ControlPlane(local)
	}
	client, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		return nil, fmt.Errorf("metrics client for %s: %w", restConfig.Host, err)
	}
	return []scrape.Source{APIServer(restConfig.Host, client)}, nil
}

// ControlPlane returns a source for each component of a local control plane.
func ControlPlane(cp *controlplane.ControlPlane) ([]scrape.Source, error) {
	client, err := cp.MetricsClient()
	if err != nil {
		return nil, fmt.Errorf("metrics client of the control plane in %s: %w", cp.Dir, err)
	}
	var out []scrape.Source
	for _, ep := range cp.MetricsEndpoints() {
		if ep.URL != "" {
			out = append(out, &scrape.HTTPSource{Name: ep.Component, URL: ep.URL, Client: client})
		}
	}
	return out, nil
}

// APIServer scrapes the /metrics of the apiserver at host with client (from
// rest.HTTPClientFor): for a cluster other than the local control plane, whose credential needs get on
// the nonResourceURL /metrics.
func APIServer(host string, client *http.Client) scrape.Source {
	return &scrape.HTTPSource{Name: "kube-apiserver", URL: strings.TrimSuffix(host, "/") + "/metrics", Client: client}
}
