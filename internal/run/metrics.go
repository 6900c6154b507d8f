package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"fakelet.dev/fakelet/internal/metrics"
)

// runMetrics are a run's metrics and the server that exposes them.
type runMetrics struct {
	*metrics.Metrics
	srv *metrics.Server // nil with --metrics-addr=""
	// reportServed says the server serves the run's report (serveReport).
	reportServed bool
}

// metricsShutdownTimeout bounds the wait for a scrape in flight at the end of a run.
const metricsShutdownTimeout = 5 * time.Second

// startMetrics serves the run's metrics at --metrics-addr. They read the fleet's tally once the fleet
// is registered (RegisterFleet), so the fleet's configuration needs no recorder of theirs. With
// --metrics-addr="" nothing is served, but the metrics still take a profile's calls.
func startMetrics(mf MetricsOptions, log io.Writer) (*runMetrics, error) {
	rm := &runMetrics{Metrics: metrics.New(metrics.Options{})}
	if mf.Addr == "" {
		if mf.Pprof {
			return nil, errors.New("--pprof serves on --metrics-addr, which is empty")
		}
		return rm, nil
	}
	srv, err := metrics.Serve(mf.Addr, rm.Metrics, metrics.ServerOptions{Pprof: mf.Pprof})
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	rm.srv = srv
	fmt.Fprintf(log, "metrics: %s\n", srv.URL())
	if mf.Pprof {
		fmt.Fprintf(log, "pprof: http://%s/debug/pprof/\n", srv.Addr())
	}
	if !srv.Loopback() {
		fmt.Fprintf(log, "warning: metrics%s served beyond loopback, on %s\n", map[bool]string{true: " and pprof"}[mf.Pprof], srv.Addr())
	}
	return rm, nil
}

// stop ends the server, letting a scrape in flight finish.
func (rm *runMetrics) stop(log io.Writer) {
	if rm.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
	defer cancel()
	if err := rm.srv.Shutdown(ctx); err != nil {
		fmt.Fprintln(log, "stop serving metrics:", err)
	}
}

// served says what a run's metrics server offers once the run is over.
func (rm *runMetrics) served() string {
	if rm.srv == nil {
		return "nothing (--metrics-addr is empty)"
	}
	what := rm.srv.URL()
	if rm.reportServed {
		what += " and the report at " + rm.srv.ReportURL()
	}
	return what
}

// serveReport serves the report written to dir on the metrics server, and says where.
func (rm *runMetrics) serveReport(dir string, log io.Writer) {
	if rm == nil || rm.srv == nil {
		return
	}
	if err := rm.srv.ServeReport(dir); err != nil {
		fmt.Fprintln(log, "report:", err)
		return
	}
	rm.reportServed = true
	fmt.Fprintf(log, "report: served at %s\n", rm.srv.ReportURL())
}
