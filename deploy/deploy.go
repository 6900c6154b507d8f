// Package deploy holds the files fakelet deploys beside itself, embedded so that the fakelet binary
// can write them out: the Prometheus configuration and recording rules (prometheus/) and the Grafana
// dashboard (grafana/). WriteLocalPrometheus renders the Prometheus files for a local control plane.
package deploy

import (
	_ "embed"
)

// PrometheusConfig is prometheus/prometheus.yml: fakelet and the local control plane, with targets
// from file-based discovery (see WriteLocalPrometheus).
//
//go:embed prometheus/prometheus.yml
var PrometheusConfig []byte

// PrometheusRules is prometheus/rules.yml, the recording rules.
//
//go:embed prometheus/rules.yml
var PrometheusRules []byte

// GrafanaDashboard is grafana/fakelet.json.
//
//go:embed grafana/fakelet.json
var GrafanaDashboard []byte

// DefaultFakeletTarget is where Prometheus finds fakelet unless told otherwise: the default of
// fakelet run --metrics-addr.
const DefaultFakeletTarget = "127.0.0.1:9464"
