package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"fakelet.dev/fakelet/internal/bench"
	"fakelet.dev/fakelet/internal/run"
	"fakelet.dev/fakelet/internal/standin"
)

func init() { subcommandFactories = append(subcommandFactories, newStandInCommand) }

// standInWriteLatency is how long the stand-in holds a write by default: with it, a lease PUT
// takes the fleet about as long as one against the local control plane's apiserver at 1000 nodes
// (docs/performance.md, "The stand-in answers a write as late as an apiserver"). Writes held longer
// than maxStandInWriteLatency would measure the fleet waiting, not working.
const (
	standInWriteLatency    = 3 * time.Millisecond
	maxStandInWriteLatency = time.Second
)

// standInGCPercent is the stand-in's GOGC by default. Its memory is not what a benchmark measures,
// its CPU beside the fleet is: on a core of its own it kept up with the largest fleet measured,
// which Go's default did not (docs/performance.md, "The fleet on a core of its own").
const standInGCPercent = 400

// newStandInCommand is `fakelet stand-in`, hidden: the benchmark target `fakelet bench --target
// stand-in` starts as a process of its own, so that its CPU is not the fleet's.
func newStandInCommand() *cobra.Command {
	var listen, kubeconfig, cpuProfile, pprofAddr string
	var procs, gcPercent int
	o := standin.Options{}
	cmd := &cobra.Command{
		Use:    "stand-in",
		Short:  "Serve the benchmark's stand-in for kube-apiserver (fakelet bench --target stand-in starts it; never a run's target)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return fmt.Errorf("--kubeconfig: give the file to write the stand-in's kubeconfig to")
			}
			if procs < 0 {
				return fmt.Errorf("--gomaxprocs must not be negative, got %d", procs)
			}
			if gcPercent <= 0 {
				return fmt.Errorf("--gogc must be positive, got %d", gcPercent)
			}
			if o.WriteLatency < 0 || o.WriteLatency > maxStandInWriteLatency {
				return fmt.Errorf("--write-latency %v: between 0 and %v", o.WriteLatency, maxStandInWriteLatency)
			}
			if procs > 0 && os.Getenv("GOMAXPROCS") == "" {
				runtime.GOMAXPROCS(procs)
			}
			run.SetGC(gcPercent)
			cert, caPEM, err := standin.SelfSigned(time.Now())
			if err != nil {
				return err
			}
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen: %w", err)
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpu-profile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpu-profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			if pprofAddr != "" {
				pl, err := net.Listen("tcp", pprofAddr)
				if err != nil {
					return fmt.Errorf("--pprof-addr: %w", err)
				}
				defer pl.Close()
				go func() { _ = http.Serve(pl, pprofMux()) }()
			}
			s := standin.New(o)
			if err := s.WriteKubeconfig(kubeconfig, "https://"+l.Addr().String(), caPEM); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "fakelet stand-in (a benchmark target only) serving at https://%s, kubeconfig %s\n", l.Addr(), kubeconfig)
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			if err := s.Serve(ctx, l, cert); err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:0", "address to serve at")
	f.StringVar(&kubeconfig, "kubeconfig", "", "write the kubeconfig that reaches the stand-in to this file")
	f.DurationVar(&o.Bookmarks, "bookmarks", time.Minute, "interval between a watch's bookmarks")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write the stand-in's CPU profile to this file, for a look at what it costs")
	f.StringVar(&pprofAddr, "pprof-addr", "", "serve Go's profiles on http://ADDR/debug/pprof/, for a profile of a window of the stand-in's life")
	// One P by default: the stand-in's goroutines hand each request and answer to one another
	// (x/net's reader, serve loop, handler, flush), and with a P per core each handoff woke a thread
	// on the other core, which the fleet beside it needs.
	f.IntVar(&procs, "gomaxprocs", 1, "threads running Go code at once (0: one per CPU; the GOMAXPROCS environment variable overrides this)")
	f.IntVar(&gcPercent, "gogc", standInGCPercent, "percent the heap grows between garbage collections (the GOGC and GOMEMLIMIT environment variables override this)")
	f.DurationVar(&o.WriteLatency, "write-latency", standInWriteLatency,
		"hold each write this long before answering it, as an apiserver's admission and etcd write do (0: answer at once)")
	f.IntVar(&o.WatchBuffer, "watch-buffer", 100, "events a watch may have unsent before it is ended as too slow")
	f.IntVar(&o.WatchHistory, "watch-history", 10000, "changes of each resource kept for watches that resume")
	return cmd
}

// pprofMux serves Go's profiles alone, apart from the stand-in's API and from the default mux.
func pprofMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", httppprof.Index)
	m.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	return m
}

// refuseStandIn refuses a target that is fakelet's stand-in, unless `fakelet bench` started this
// run: the stand-in measures the fleet, and nothing a run reports of a control plane would be true
// of it. A target that does not answer /version is not refused here; the run finds out soon enough.
func refuseStandIn(ctx context.Context, cfg *rest.Config) error {
	if os.Getenv(standin.BenchEnv) == standin.BenchEnvValue {
		return nil
	}
	c := rest.CopyConfig(cfg)
	c.Timeout = 10 * time.Second
	client, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil
	}
	u, _, err := rest.DefaultServerUrlFor(c)
	if err != nil {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u.String(), "/")+"/version", nil)
	if err != nil {
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v version.Info
	if json.NewDecoder(resp.Body).Decode(&v) != nil || v.GitVersion != standin.GitVersion {
		return nil
	}
	return fmt.Errorf("%s is fakelet's stand-in for kube-apiserver (version %s), a benchmark target only: "+
		"it measures the fleet, not a control plane; use it with fakelet bench --target stand-in", cfg.Host, v.GitVersion)
}

// standInBenchFlags refuses the bench flags that need a control plane when the target is the
// stand-in: the kubemark reference and a peer compare with what an apiserver records.
func standInBenchFlags(cmd *cobra.Command, ref referenceFlags, peer string, peerArgs []string, o bench.Options) error {
	switch {
	case ref.name != "" || ref.flagsUsed(cmd):
		return fmt.Errorf("--target %s: the kubemark reference needs a control plane's audit log; drop --reference", bench.TargetStandIn)
	case peer != "" || len(peerArgs) > 0:
		return fmt.Errorf("--target %s: a peer is measured against a control plane; drop --peer", bench.TargetStandIn)
	case len(o.APIServerArgs) > 0:
		return fmt.Errorf("--target %s: there is no kube-apiserver to give --apiserver-arg", bench.TargetStandIn)
	case cmd.Flags().Changed("pods-per-node") || cmd.Flags().Changed("controller-manager-arg") || cmd.Flags().Changed("scheduler-arg"):
		return fmt.Errorf("--target %s: no controller manager or scheduler makes and places pods there; drop --pods-per-node", bench.TargetStandIn)
	}
	return nil
}
