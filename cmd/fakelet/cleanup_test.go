package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestInvalidCleanupFlagsAreRefusedClearly(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fleet=Blue"}, `--fleet: fleet name "Blue" must be a lower-case DNS label`},
		{[]string{"--fleet="}, "--fleet must not be empty"},
		{nil, ""}, // the default fleet: fine, and no control plane is up in the directory
		{[]string{"--kubeconfig=" + filepath.Join(t.TempDir(), "missing")}, "load kubeconfig"},
		{[]string{"extra"}, `unknown command "extra" for "fakelet cleanup"`},
		{[]string{"--cleanup-qps=0"}, "--cleanup-qps must be between 0.1 and 10000 deletions a second, got 0"},
		{[]string{"--cleanup-qps=NaN"}, "--cleanup-qps must be between 0.1 and 10000 deletions a second, got NaN"},
		{[]string{"--cleanup-qps=1e-12"}, "--cleanup-qps must be between 0.1 and 10000 deletions a second, got 1e-12"},
		{[]string{"--cleanup-qps=1e9"}, "--cleanup-qps must be between 0.1 and 10000 deletions a second, got 1e+09"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append([]string{"cleanup", "--controlplane-dir", t.TempDir()}, tc.args...))
			err := root.Execute()
			if tc.want == "" {
				if err != nil || !strings.Contains(out.String(), "no local control plane is up") {
					t.Fatalf("error %v, output %q: want a note that there is nothing to clean", err, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("fakelet cleanup %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
		})
	}
}

// What is left after a cleanup is named with the command that removes it, for the same cluster.
func TestCleanupCommandTargetsTheSameCluster(t *testing.T) {
	for _, tc := range []struct {
		target targetFlags
		want   string
	}{
		{targetFlags{controlPlaneDir: ".fakelet/controlplane"}, "fakelet cleanup --fleet blue"},
		{targetFlags{controlPlaneDir: "/tmp/cp"}, "fakelet cleanup --fleet blue --controlplane-dir /tmp/cp"},
		{targetFlags{kubeconfig: "/home/me/my kube", context: "kind", insecure: true},
			"fakelet cleanup --fleet blue --kubeconfig '/home/me/my kube' --context kind --insecure-skip-tls-verify"},
	} {
		if got := cleanupCommand("blue", tc.target); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.target, got, tc.want)
		}
	}
}
