package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"fakelet.dev/fakelet/fidelity"
	"fakelet.dev/fakelet/internal/bench"
)

// referenceFlags are fakelet bench's flags for --reference.
type referenceFlags struct {
	name        string
	nodes       int
	windows     string
	podsPerNode int
}

// referenceOnly are the flags that mean something only with --reference.
var referenceOnly = []string{"nodes", "windows"}

// benchOnly are fakelet bench's flags that a reference run does not use.
var benchOnly = []string{"sizes", "footprints", "steady", "settle", "register-timeout", "register-qps", "run-arg", "run-env", "apiserver-arg", "pods-timeout", "controller-manager-arg", "scheduler-arg"}

func (r *referenceFlags) add(f *pflag.FlagSet) {
	f.StringVar(&r.name, "reference", "", "compare fakelet's agents with a reference kubelet instead: "+bench.Reference+" (see docs/fidelity.md)")
	f.IntVar(&r.nodes, "nodes", 2, "with --reference: hollow kubelets, and as many fakelet agents")
	f.StringVar(&r.windows, "windows", "", "with --reference: window lengths, NAME=DURATION comma-separated (default "+bench.DefaultWindows.String()+")")
	f.IntVar(&r.podsPerNode, "pods-per-node", 0, fmt.Sprintf("pods placed by the scheduler for every node: with --reference, in its pods window (%d if not given); otherwise each fleet is measured again with them", bench.DefaultReferencePodsPerNode))
}

// flagsUsed says whether a flag of a reference run was given.
func (r *referenceFlags) flagsUsed(cmd *cobra.Command) bool {
	for _, name := range referenceOnly {
		if cmd.Flags().Changed(name) {
			return true
		}
	}
	return false
}

// options checks the flags, all of them before anything starts.
func (r *referenceFlags) options(cmd *cobra.Command, dir, binDir string) (bench.ReferenceOptions, error) {
	o := bench.ReferenceOptions{Nodes: r.nodes, PodsPerNode: r.podsPerNode, BinDir: binDir}
	if !cmd.Flags().Changed("pods-per-node") {
		o.PodsPerNode = bench.DefaultReferencePodsPerNode
	}
	if r.name != bench.Reference {
		if r.name == "" {
			return o, fmt.Errorf("--%s needs --reference %s", strings.Join(changed(cmd, referenceOnly), ", --"), bench.Reference)
		}
		return o, fmt.Errorf("--reference %q: the only reference is %s", r.name, bench.Reference)
	}
	if used := changed(cmd, benchOnly); len(used) > 0 {
		return o, fmt.Errorf("--%s: not used with --reference (its windows are --windows)", strings.Join(used, ", --"))
	}
	var err error
	if o.Windows, err = bench.ParseWindows(r.windows, bench.DefaultWindows); err != nil {
		return o, fmt.Errorf("--windows: %w", err)
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	if _, err := bench.FindKubemark(binDir); err != nil {
		return o, err
	}
	if o.Dir, err = filepath.Abs(filepath.Join(dir, "reference")); err != nil {
		return o, err
	}
	return o, nil
}

func changed(cmd *cobra.Command, names []string) []string {
	var out []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			out = append(out, n)
		}
	}
	return out
}

func (r *referenceFlags) run(cmd *cobra.Command, dir, binDir, out string) error {
	o, err := r.options(cmd, dir, binDir)
	if err != nil {
		return err
	}
	o.Log = cmd.ErrOrStderr()
	ctx, stop := signalContext(cmd.Context())
	defer stop()
	res, runErr := bench.RunReference(ctx, o)
	if len(res.Requests) > 0 {
		writeReference(cmd.OutOrStdout(), o, res)
		if out != "" {
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			defer f.Close()
			fmt.Fprintf(f, "Measured %s with `fakelet bench --reference %s --nodes %d --windows %s --pods-per-node %d`.\n\n",
				time.Now().UTC().Format("2006-01-02"), bench.Reference, o.Nodes, o.Windows, o.PodsPerNode)
			writeReference(f, o, res)
		}
	}
	return runErr
}

func writeReference(w io.Writer, o bench.ReferenceOptions, res bench.ReferenceResult) {
	rows := res.Compare(bench.KnownDifferences())
	fmt.Fprintf(w, "%d hollow kubelets (kubemark) and %d fakelet agents, requests per node (or per pod) from the apiserver's audit log (%s); windows %s.\n\n",
		len(res.Hollow), len(res.Fakelet), res.AuditLog, o.Windows)
	for _, win := range res.Windows {
		if win.Pods != nil {
			fmt.Fprintf(w, "In the %s window the scheduler placed %s pods per hollow kubelet and %s per fakelet agent (%v); rows per pod are divided by them.\n\n",
				win.Name, strconv.FormatFloat(win.PodsPerNode(res.Hollow), 'f', -1, 64), strconv.FormatFloat(win.PodsPerNode(res.Fakelet), 'f', -1, 64), win.Pods)
		}
	}
	fidelity.WriteTable(w, rows, fidelity.DefaultBound)
	shared := res.Shared()
	fmt.Fprintf(w, "\nThe fakelet fleet's own requests, shared by its %d agents (not in the table):\n", len(res.Fakelet))
	for _, win := range res.Windows {
		var parts []string
		for c, n := range shared[win.Name] {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
		slices.Sort(parts)
		if len(parts) == 0 {
			parts = []string{"none"}
		}
		fmt.Fprintf(w, "- %s: %s\n", win.Name, strings.Join(parts, ", "))
	}
	if unneeded := fidelity.Unneeded(rows, bench.KnownDifferences()); len(unneeded) > 0 {
		fmt.Fprintf(w, "\nKnown differences this run did not need (the agent sent what the kubelet sent, or neither sent the class):\n")
		for _, k := range unneeded {
			fmt.Fprintf(w, "- %s\n", k.Reason)
		}
	}
	b := fidelity.DefaultBound
	if bad := fidelity.Unexplained(rows, b); len(bad) > 0 {
		fmt.Fprintf(w, "\n%d classes differ by more than %.0f%% (and more than %v request per node) without a known reason.\n",
			len(bad), b.Tolerance*100, b.Slack)
	}
}
