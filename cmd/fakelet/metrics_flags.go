package main

import (
	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/internal/metrics"
	"fakelet.dev/fakelet/internal/run"
)

// addMetricsFlags binds the flags of where a run serves its metrics.
func addMetricsFlags(f *pflag.FlagSet, mf *run.MetricsOptions) {
	f.StringVar(&mf.Addr, "metrics-addr", metrics.DefaultAddr, "serve Prometheus metrics on http://ADDR/metrics (and /healthz); empty serves nothing")
	f.BoolVar(&mf.Pprof, "pprof", false, "also serve Go's profiles on http://ADDR/debug/pprof/ of --metrics-addr")
}
