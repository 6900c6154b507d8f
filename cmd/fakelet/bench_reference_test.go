package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input to a reference run is refused before anything starts, naming what is wrong.
func TestBenchReferenceFlagsAreCheckedFirst(t *testing.T) {
	noBins := filepath.Join(t.TempDir(), "empty")
	// A control plane's binaries without kubemark, as a tree built before kubemark was.
	noKubemark := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if err := os.WriteFile(filepath.Join(noKubemark, name), []byte("#!/bin/false\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nodes=3"}, "--nodes needs --reference kubemark"},
		{[]string{"--windows=steady=1m", "--nodes=1"}, "--nodes, --windows needs --reference kubemark"},
		{[]string{"--reference=kwok"}, `--reference "kwok": the only reference is kubemark`},
		{[]string{"--reference=kubemark", "--sizes=10"}, "--sizes: not used with --reference"},
		{[]string{"--reference=kubemark", "--footprints=kubelet"}, "--footprints: not used with --reference"},
		{[]string{"--reference=kubemark", "--pods-timeout=1m"}, "--pods-timeout: not used with --reference"},
		{[]string{"--reference=kubemark", "--windows=warmup=1m"}, `--windows: unknown window "warmup"`},
		{[]string{"--reference=kubemark", "--windows=steady=0s"}, "--windows: steady=0s: want a positive duration"},
		{[]string{"--reference=kubemark", "--nodes=0"}, "nodes must be between 1 and 100"},
		{[]string{"--reference=kubemark", "--pods-per-node=200"}, "pods per node must be between 0 and 110"},
		{[]string{"--reference=kubemark", "--bin-dir=" + noBins}, "not in --bin-dir " + noBins},
		{[]string{"--reference=kubemark", "--bin-dir=" + noKubemark}, "no kubemark beside " + filepath.Join(noKubemark, "kube-apiserver") + ": run `make controlplane`"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append([]string{"bench", "--dir", t.TempDir()}, tc.args...))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("fakelet bench %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
			if strings.Contains(out.String(), "control plane") {
				t.Errorf("something started: %s", out.String())
			}
		})
	}
}
