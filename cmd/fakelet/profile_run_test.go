package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
	"fakelet.dev/fakelet/profiles"
	"fakelet.dev/fakelet/scenario"
)

// prepareRun parses `fakelet run` arguments and prepares the run as RunE does, without running it.
func prepareRun(t *testing.T, args ...string) (fleet.Config, *profiles.Plan, error) {
	t.Helper()
	var rf runFlags
	cmd := newRunCommandFor(&rf)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	cfg, plan, err := rf.prepare(cmd.Flags())
	return cfg.Config(), plan, err
}

func TestRunProfileSetsWhatTheFlagsDoNot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mine.yaml")
	body := `apiVersion: fakelet.dev/v1alpha1
kind: Profile
metadata: {name: mine}
spec:
  nodes: 30
  zones: 3
  seed: 7
  heartbeat: {mode: status, leaseDurationSeconds: 20, statusUpdateFrequency: 5s, statusReportFrequency: 1m}
  groups:
    a: {names: [fakelet-00029]}
    b: {count: 3}
  phases:
  - {name: p, duration: 1m, actions: [{group: a, do: stop}]}
`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, plan, err := prepareRun(t, "--profile", file)
	if err != nil {
		t.Fatal(err)
	}
	want := heartbeat.Config{Mode: heartbeat.ModeStatus, LeaseDurationSeconds: 20, RenewInterval: 5 * time.Second,
		StatusUpdateFrequency: 5 * time.Second, StatusReportFrequency: time.Minute}
	if cfg.Nodes != 30 || cfg.Zones != 3 || cfg.Heartbeat != want || plan.Seed != 7 {
		t.Errorf("from the profile: %d nodes, %d zones, heartbeat %+v, seed %d; want 30, 3, %+v, 7", cfg.Nodes, cfg.Zones, cfg.Heartbeat, plan.Seed, want)
	}
	if got := plan.Groups["a"]; len(got) != 1 || got[0] != 29 {
		t.Errorf("group by name: %v, want [29]", got)
	}
	if z := cfg.ZoneOf(4, cfg.Zones); z != profiles.ZoneOf(4, 3) {
		t.Errorf("node 4 in %s, want the profile's %s", z, profiles.ZoneOf(4, 3))
	}

	// Flags given explicitly win.
	cfg, plan, err = prepareRun(t, "--profile", file, "--nodes", "40", "--mode", "lease", "--lease-duration", "60s",
		"--status-update-frequency", "20s", "--status-report-frequency", "2m", "--seed", "9", "--zones", "3")
	if err != nil {
		t.Fatal(err)
	}
	want = heartbeat.Config{Mode: heartbeat.ModeLease, LeaseDurationSeconds: 60, RenewInterval: 15 * time.Second,
		StatusUpdateFrequency: 20 * time.Second, StatusReportFrequency: 2 * time.Minute}
	if cfg.Nodes != 40 || plan.Nodes != 40 || cfg.Heartbeat != want || plan.Seed != 9 {
		t.Errorf("with flags: %d nodes (plan %d), heartbeat %+v, seed %d; want 40, %+v, 9", cfg.Nodes, plan.Nodes, cfg.Heartbeat, plan.Seed, want)
	}
}

func TestRunProfileRefusedBeforeTouchingACluster(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "stop-10pct", "--zones", "2"}, "--zones 2: profile stop-10pct has 3 zone(s)"},
		{[]string{"--profile", "auth-failure", "--identity", "fleet"}, "it needs identity \"node\""},
		{[]string{"--profile", "churn", "--nodes", "100"}, "asks for 200 nodes, and the fleet has 100"},
		{[]string{"--profile", "no-such-profile"}, "no built-in profile has that name"},
		{[]string{"--seed", "3"}, "--seed applies to a profile, and no --profile is given"},
	} {
		_, _, err := prepareRun(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestEveryBuiltinPreparesAtItsOwnSize(t *testing.T) {
	for _, name := range profiles.BuiltinNames() {
		cfg, plan, err := prepareRun(t, "--profile", name)
		p, _ := profiles.Builtin(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if cfg.Nodes != p.Spec.Nodes || cfg.PodsPerNode != p.Spec.PodsPerNode || scenario.Check(plan, cfg) != nil {
			t.Errorf("%s: fleet of %d nodes with %d pods each for spec.nodes %d, spec.podsPerNode %d",
				name, cfg.Nodes, cfg.PodsPerNode, p.Spec.Nodes, p.Spec.PodsPerNode)
		}
	}
}

func TestProfilePodsMakeTheFleetsPods(t *testing.T) {
	cfg, plan, err := prepareRun(t, "--profile", "testdata/pods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PodsPerNode != 2 || cfg.PodTolerationSeconds == nil || *cfg.PodTolerationSeconds != 30 || scenario.Check(plan, cfg) != nil {
		t.Errorf("fleet with %d pods per node, toleration %v; want the profile's 2 and 30 s", cfg.PodsPerNode, cfg.PodTolerationSeconds)
	}
}

func TestWithoutProfileTheRunIsAsBefore(t *testing.T) {
	cfg, plan, err := prepareRun(t, "--nodes", "5")
	if err != nil || plan != nil {
		t.Fatalf("plan %v, error %v", plan, err)
	}
	if cfg.Nodes != 5 || cfg.Zones != 0 || cfg.ZoneOf != nil || cfg.Heartbeat.Mode != heartbeat.ModeLease {
		t.Errorf("config %+v", cfg)
	}
}
