// Package compare measures the same fleet in lease and in status heartbeat mode, one mode after the
// other, and puts what each cost the control plane side by side (fakelet compare).
package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/internal/pause"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/report"
)

// Modes are the modes a comparison measures, in the order it measures them: the ratio column is the
// second over the first.
var Modes = []heartbeat.Mode{heartbeat.ModeLease, heartbeat.ModeStatus}

// Options are what both modes share.
type Options struct {
	Nodes int
	// Duration is each mode's measured window; Settle passes before it once every node is Ready,
	// untainted and has its Lease, and on one cluster also between the two modes.
	Duration, Settle time.Duration
	ScrapeInterval   time.Duration
	Images           int // 0 for none
	Footprint        agent.Footprint
	// Dir receives each mode's report under Dir/<mode>.
	Dir string
	// Parameters describes a mode's fleet configuration in its report.
	Parameters func(fleet.Resolved) record.Parameters
	Versions   record.Versions
	// Log receives progress.
	Log io.Writer
}

// OnOneCluster measures both modes on the cluster cfg reaches (local is its control plane if fakelet
// runs it, else nil), one after the other. It refuses a cluster that still has a compare fleet's Nodes.
func OnOneCluster(ctx context.Context, o Options, cfg *rest.Config, local *controlplane.ControlPlane, description string) (*report.Comparison, error) {
	cl, err := ClusterOf(cfg, local, description)
	if err != nil {
		return nil, err
	}
	if err := NoFleetsLeft(ctx, cl.Client, Modes); err != nil {
		return nil, err
	}
	c, err := compareModes(ctx, o, true, func(heartbeat.Mode) (*Cluster, func(), error) { return cl, func() {}, nil })
	if err != nil {
		return nil, err
	}
	c.Target = description
	return c, nil
}

// OnFreshClusters measures each mode on a control plane of its own, which up starts in
// workDir/<mode> and which is stopped after the mode; an empty workDir is a temporary directory,
// removed afterwards.
func OnFreshClusters(ctx context.Context, o Options, workDir string, up func(ctx context.Context, dir string) (*controlplane.ControlPlane, error)) (*report.Comparison, error) {
	if workDir == "" {
		tmp, err := os.MkdirTemp("", "fakelet-compare-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		workDir = tmp
	}
	return compareModes(ctx, o, false, func(mode heartbeat.Mode) (*Cluster, func(), error) {
		return freshCluster(ctx, o.Log, up, filepath.Join(workDir, string(mode)))
	})
}

// compareModes measures the modes and puts them side by side.
func compareModes(ctx context.Context, o Options, oneCluster bool, clusterFor func(heartbeat.Mode) (*Cluster, func(), error)) (*report.Comparison, error) {
	reports, notes, err := measureModes(ctx, o, oneCluster, clusterFor)
	if err != nil {
		return nil, err
	}
	c := &report.Comparison{Nodes: o.Nodes, Duration: o.Duration.String(), Footprint: string(o.Footprint), Notes: notes}
	for i, r := range reports {
		c.Sides = append(c.Sides, report.Side{Mode: string(Modes[i]), Load: r.Load.Phases[0]})
	}
	return c, nil
}

// JSONFile is the comparison's file in its report directory.
const JSONFile = "compare.json"

// WriteJSON writes c to dir/compare.json.
func WriteJSON(c *report.Comparison, dir string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, JSONFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", JSONFile, err)
	}
	return nil
}

// measureModes measures each of Modes in turn on the cluster clusterFor gives it, writes its report
// under o.Dir, and lets the cluster go before the next. On one cluster, o.Settle passes between the
// modes.
func measureModes(ctx context.Context, o Options, oneCluster bool, clusterFor func(heartbeat.Mode) (*Cluster, func(), error)) (reports []*report.Report, notes []string, err error) {
	for i, mode := range Modes {
		if i > 0 && oneCluster {
			// The fleet before is gone (measureMode waited for it): let the cluster settle from its
			// deletion before the next registers.
			fmt.Fprintf(o.Log, "settling %v before %s mode\n", o.Settle, mode)
			if err := pause.For(ctx, o.Settle); err != nil {
				return nil, nil, err
			}
		}
		cl, release, err := clusterFor(mode)
		if err != nil {
			return nil, nil, fmt.Errorf("%s mode: %w", mode, err)
		}
		r, note, err := measureMode(ctx, o, mode, cl)
		release()
		if err != nil {
			return nil, nil, fmt.Errorf("%s mode: %w", mode, err)
		}
		if note != "" {
			notes = append(notes, note)
		}
		if err := r.WriteDir(filepath.Join(o.Dir, string(mode))); err != nil {
			return nil, nil, err
		}
		reports = append(reports, r)
	}
	return reports, notes, nil
}
