package main

import (
	"bytes"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/internal/run"
)

// TestInvalidRunFlagsAreRefusedClearly: each bad flag value stops `fakelet run` before it reaches a
// cluster, with an error that names the flag and what it must be. Every case also names a kubeconfig
// that does not exist, so a value that wrongly passed would fail on loading it, not start a control
// plane.
func TestInvalidRunFlagsAreRefusedClearly(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--duration=-1s"}, "--duration must not be negative, got -1s"},
		{[]string{"--renew-interval=-10s"}, "--renew-interval must not be negative"},
		{[]string{"--status-update-frequency=-1m"}, "--status-update-frequency must not be negative"},
		{[]string{"--status-report-frequency=-5m"}, "--status-report-frequency must not be negative"},
		{[]string{"--lease-duration=0s"}, "--lease-duration must be a positive whole number of seconds, got 0s"},
		{[]string{"--lease-duration=-40s"}, "--lease-duration must be a positive whole number of seconds"},
		{[]string{"--lease-duration=1500ms"}, "--lease-duration must be a positive whole number of seconds, got 1.5s"},
		{[]string{"--renew-interval=40s"}, "lease renew interval 40s must be shorter than the lease duration 40s"},
		{[]string{"--status-report-frequency=1s"}, "status report frequency 1s must not be shorter than the update frequency 10s"},
		{[]string{"--duration=soon"}, `invalid argument "soon" for "--duration" flag`},
		{[]string{"--mode=gossip"}, `--mode: unknown heartbeat mode "gossip" (want "lease" or "status")`},
		{[]string{"--mode="}, `--mode: unknown heartbeat mode ""`},
		{[]string{"--identity=root"}, `--identity: unknown identity "root" (want "node" or "fleet")`},
		{[]string{"--footprint=full"}, `--footprint: unknown footprint "full" (want "kubelet" or "heartbeat")`},
		{[]string{"--images=51"}, "--images must be between 0 and 50, got 51"},
		{[]string{"--images=-1"}, "--images must be between 0 and 50, got -1"},
		{[]string{"--nodes=0"}, "--nodes must be positive, got 0"},
		{[]string{"--nodes=-5"}, "--nodes must be positive, got -5"},
		{[]string{"--nodes=many"}, `invalid argument "many" for "--nodes" flag`},
		{[]string{"--name-prefix=Fakelet"}, `--name-prefix: name prefix "Fakelet" must be a lower-case DNS label`},
		{[]string{"--name-prefix=fake_let"}, `--name-prefix: name prefix "fake_let" must be a lower-case DNS label`},
		{[]string{"--name-prefix=-fakelet"}, `--name-prefix: name prefix "-fakelet" must be a lower-case DNS label`},
		{[]string{"--name-prefix=" + strings.Repeat("a", 41)}, "of at most 40 characters"},
		{[]string{"--fleet=Blue Team"}, `--fleet: fleet name "Blue Team" must be a lower-case DNS label`},
		{[]string{"--fleet="}, "--fleet must not be empty"},
		{[]string{"--name-prefix="}, "--name-prefix must not be empty"},
		{[]string{"--zones=-1"}, "--zones must not be negative, got -1"},
		{[]string{"--connections=-2"}, "--connections must not be negative, got -2"},
		{[]string{"--coalesce=-1ms"}, "--coalesce must be between 0 and 1s, got -1ms"},
		{[]string{"--coalesce=2s"}, "--coalesce must be between 0 and 1s, got 2s"},
		{[]string{"--pod-start-delay=-1s"}, "--pod-start-delay must not be negative, got -1s"},
		{[]string{"--pod-run-duration=-5s"}, "--pod-run-duration must not be negative, got -5s"},
		{[]string{"--gomaxprocs=-1"}, "--gomaxprocs must not be negative, got -1"},
		{[]string{"--register-qps=0"}, "--register-qps must be positive and finite, got 0"},
		{[]string{"--register-qps=-10"}, "--register-qps must be positive and finite, got -10"},
		{[]string{"--register-qps=NaN"}, "--register-qps must be positive and finite, got NaN"},
		{[]string{"--register-qps=+Inf"}, "--register-qps must be positive and finite, got +Inf"},
		{[]string{"--nodes=9223372036854775807"}, "--nodes 9223372036854775807: more than the largest fleet fakelet runs (1000000 nodes)"},
		{[]string{"--nodes=100000000"}, "--nodes 100000000: more than the largest fleet fakelet runs"},
		{[]string{"--lease-duration=5000000000s"}, "--lease-duration 5000000000s: at most 2147483647s, since a Lease holds its duration in seconds as a 32-bit integer"},
		{[]string{"--renew-interval=1ms"}, "--renew-interval 1ms: at least 250ms, a kubelet's shortest"},
		{[]string{"--status-update-frequency=1ms"}, "--status-update-frequency 1ms: at least 1s"},
		{[]string{"--scrape-interval=0"}, "--scrape-interval 0s: at least 1s"},
		{[]string{"--scrape-interval=-1s"}, "--scrape-interval -1s: at least 1s"},
		{[]string{"--connections=11", "--nodes=10"}, "--connections 11: more than the fleet's 10 nodes"},
		{[]string{"--connections=per-nod"}, `--connections "per-nod": want shared, per-node or a number of shared connections`},
		{[]string{"--connections="}, `--connections "": want shared, per-node or a number`},
		{[]string{"--connections=per-node", "--legacy-wire"}, "the legacy wire path is one of shared connections"},
		{[]string{"--metrics-addr=9464"}, `--metrics-addr "9464": want HOST:PORT`},
		{[]string{"--profile=steady", "--status-update-frequency=10ms"}, "--status-update-frequency 10ms: at least 1s"},
		{[]string{"--cleanup-qps=0"}, "--cleanup-qps must be between 0.1 and 10000 deletions a second, got 0"},
		{[]string{"--cleanup-qps=1e-12"}, "--cleanup-qps must be between 0.1 and 10000 deletions a second, got 1e-12"},
		{[]string{"--node-monitor-grace-period=-1s"}, "--node-monitor-grace-period must not be negative, got -1s"},
		{[]string{"--cleanup-qps=NaN"}, "--cleanup-qps must be between 0.1 and 10000 deletions a second, got NaN"},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"extra"}, `unknown command "extra" for "fakelet run"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append([]string{"run", "--kubeconfig", missing}, tc.args...))
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("fakelet run %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
			if strings.Contains(err.Error(), "kubeconfig") {
				t.Errorf("the flags were accepted and the run went on to load the kubeconfig: %v", err)
			}
			if strings.Contains(out.String(), "target:") {
				t.Errorf("the run reached a target:\n%s", out.String())
			}
		})
	}
}

// TestConnectionsFlagPicksTheMode: --connections takes a mode or, as before per-node connections, a
// number of shared connection sets.
func TestConnectionsFlagPicksTheMode(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		mode  fleet.ConnectionMode
		count int
	}{
		{nil, fleet.ConnectionsShared, 3},
		{[]string{"--connections=shared"}, fleet.ConnectionsShared, 3},
		{[]string{"--connections=2"}, fleet.ConnectionsShared, 2},
		{[]string{"--connections=0"}, fleet.ConnectionsShared, 3},
		{[]string{"--connections=per-node"}, fleet.ConnectionsPerNode, 0},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			rf := &runFlags{}
			cmd := newRunCommandFor(rf)
			if err := cmd.ParseFlags(append([]string{"--nodes=2500"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			r, _, err := rf.prepare(cmd.Flags())
			if err != nil {
				t.Fatal(err)
			}
			if cfg := r.Config(); cfg.ConnectionMode != tc.mode || cfg.Connections != tc.count {
				t.Errorf("%s connections, %d sets; want %s, %d", cfg.ConnectionMode, cfg.Connections, tc.mode, tc.count)
			}
		})
	}
}

// TestEndpointsAndTLSAreSafeByDefault: without flags, the metrics (and pprof, off unless asked)
// listen on loopback only, and TLS verification is on.
func TestEndpointsAndTLSAreSafeByDefault(t *testing.T) {
	flags := newRunCommand().Flags()
	addr := flags.Lookup("metrics-addr")
	if addr == nil {
		t.Fatal("no --metrics-addr")
	}
	host, _, err := net.SplitHostPort(addr.DefValue)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Errorf("--metrics-addr defaults to %q, want a loopback address", addr.DefValue)
	}
	for name, want := range map[string]string{"pprof": "false", "insecure-skip-tls-verify": "false"} {
		if f := flags.Lookup(name); f == nil || f.DefValue != want {
			t.Errorf("--%s: %v, want default %s", name, f, want)
		}
	}
}

// TestNodesBeyondTheMachinesMemoryAreRefused: a fleet whose nodes need more memory than the machine
// has is refused before it starts, naming --nodes (and the shard's slice) and the memory each needs.
func TestNodesBeyondTheMachinesMemoryAreRefused(t *testing.T) {
	defer func(f func() uint64) { machineMemory = f }(machineMemory)
	machineMemory = func() uint64 { return 1 << 30 } // 16384 nodes at 64 KiB
	for _, tc := range []struct {
		args []string
		want string // empty: accepted
	}{
		{[]string{"--nodes=16384"}, ""},
		{[]string{"--nodes=16385"}, "--nodes 16385: needs about 1.0 GiB at 64 KiB per node (docs/performance.md), and this machine has 1.0 GiB"},
		{[]string{"--nodes=40000", "--shard=0/2"}, "--nodes 40000 (this shard's 20000): needs about 1.2 GiB"},
		{[]string{"--nodes=40000", "--shard=0/3"}, ""},
		{[]string{"--profile=steady", "--nodes=20000"}, "--nodes 20000: needs"},
		{[]string{"--nodes=4096", "--connections=per-node"}, ""},
		{[]string{"--nodes=4097", "--connections=per-node"}, "--nodes 4097: needs about 1.0 GiB at 256 KiB per node"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			rf := &runFlags{}
			cmd := newRunCommandFor(rf)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			_, _, err := rf.prepare(cmd.Flags())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTheRunTakesItsConfigurationResolved: prepare resolves the fleet's configuration once, and what
// runs it takes a fleet.Resolved, so that none of it defaults or checks the configuration again.
func TestTheRunTakesItsConfigurationResolved(t *testing.T) {
	resolved := reflect.TypeFor[fleet.Resolved]()
	for name, fn := range map[string]struct {
		fn  any
		arg int
	}{
		"runFleet": {runFleet, 3}, "runCapacity": {runCapacity, 4}, "runFlags.options": {(*runFlags).options, 3}, "run.Parameters": {run.Parameters, 0},
	} {
		if in := reflect.TypeOf(fn.fn).In(fn.arg); in != resolved {
			t.Errorf("%s takes a %v: want a fleet.Resolved", name, in)
		}
	}
	for name, fn := range map[string]any{"runFlags.prepare": (*runFlags).prepare, "capacityFlags.prepare": (*capacityFlags).prepare} {
		if out := reflect.TypeOf(fn).Out(0); out != resolved {
			t.Errorf("%s returns a %v: want a fleet.Resolved", name, out)
		}
	}
	if f, _ := reflect.TypeFor[run.Options]().FieldByName("Fleet"); f.Type != resolved {
		t.Errorf("run.Options' Fleet is a %v: want a fleet.Resolved", f.Type)
	}
}
