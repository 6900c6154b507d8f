package main

import (
	"context"
	"strings"
	"testing"

	"fakelet.dev/fakelet/internal/standin"
)

func TestRunRefusesTheStandIn(t *testing.T) {
	_, cfg := standin.ServeLoopback(t, standin.Options{})
	ctx := context.Background()

	t.Setenv(standin.BenchEnv, "")
	err := refuseStandIn(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "benchmark target only") {
		t.Fatalf("a run against the stand-in: %v, want it refused as a benchmark target", err)
	}
	t.Setenv(standin.BenchEnv, standin.BenchEnvValue)
	if err := refuseStandIn(ctx, cfg); err != nil {
		t.Fatalf("a run fakelet bench started: %v", err)
	}
}

func TestBenchStandInRefusesWhatNeedsAControlPlane(t *testing.T) {
	for _, args := range [][]string{{"--peer", "kwok"}, {"--reference", "kubemark"}, {"--apiserver-arg", "--v=2"}, {"--pods-per-node", "30"}} {
		cmd := newBenchCommand()
		cmd.SetArgs(append([]string{"--target", "stand-in"}, args...))
		cmd.SetOut(new(strings.Builder))
		cmd.SetErr(new(strings.Builder))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--target stand-in") {
			t.Errorf("bench --target stand-in %v: %v, want it refused", args, err)
		}
	}
	cmd := newBenchCommand()
	cmd.SetArgs([]string{"--target", "elsewhere"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--target") {
		t.Errorf("bench --target elsewhere: %v", err)
	}
}

func TestStandInRefusesFlagsOutOfRange(t *testing.T) {
	for flag, want := range map[string]string{
		"--gomaxprocs=-1":      "--gomaxprocs must not be negative, got -1",
		"--gogc=0":             "--gogc must be positive, got 0",
		"--write-latency=-1ms": "--write-latency -1ms: between 0 and 1s",
		"--write-latency=2s":   "--write-latency 2s: between 0 and 1s",
	} {
		cmd := newStandInCommand()
		cmd.SetArgs([]string{"--kubeconfig", t.TempDir() + "/kubeconfig", flag})
		cmd.SetOut(new(strings.Builder))
		cmd.SetErr(new(strings.Builder))
		if err := cmd.Execute(); err == nil || err.Error() != want {
			t.Errorf("stand-in %s: %v, want %q", flag, err, want)
		}
	}
}
