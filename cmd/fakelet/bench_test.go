package main

import (
	"os"
	"strings"
	"testing"
)

// Bad --peer, --footprints and --pods-per-node input is refused, with the fix, before any control plane starts.
func TestBenchFlagsAreCheckedFirst(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--peer", "kubemark"}, `--peer: unknown peer "kubemark": the only peer is kwok`},
		{[]string{"--peer", "kwok", "--bin-dir", empty}, "--peer: kwok is not in " + empty + ": run `make kwok`"},
		{[]string{"--peer-arg=--v=INFO"}, "--peer-arg needs --peer"},
		{[]string{"--peer", "kwok", "--run-arg=--lease-duration=400s"}, "--run-arg --lease-duration=400s: with --peer both run at the kubelet's 40 s lease"},
		{[]string{"--footprints", "kubelet,hollow"}, `--footprints: unknown footprint "hollow" (want "kubelet" or "heartbeat")`},
		{[]string{"--footprints", "heartbeat,heartbeat"}, `--footprints: footprint "heartbeat" given twice`},
		{[]string{"--run-arg=--footprint=kubelet"}, "--run-arg --footprint=kubelet: give the footprints with --footprints"},
		{[]string{"--run-arg=--footprint", "--run-arg=heartbeat"}, "--run-arg --footprint: give the footprints with --footprints"},
		{[]string{"--pods-per-node=111"}, "--pods-per-node: pods per node must be between 0 and 110 (a node's pod capacity), got 111"},
		{[]string{"--pods-per-node=-1"}, "--pods-per-node: pods per node must be between 0 and 110"},
		{[]string{"--pods-timeout=10m"}, "--pods-timeout needs --pods-per-node"},
		{[]string{"--pods-per-node=30", "--pods-timeout=0s"}, "--pods-timeout must be positive, got 0s"},
		{[]string{"--pods-per-node=30", "--peer", "kwok"}, "--pods-per-node and --peer are two benches: give one"},
		{[]string{"--fleet-cpus", "1024"}, "fleet CPU 1024: not one this process may use"},
		{[]string{"--fleet-cpus", "0", "--reference", "kubemark"}, "--fleet-cpus places fleets apart from their target"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			out, err := runFakelet(t, append([]string{"bench", "--sizes", "10", "--dir", dir}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("fakelet bench %s: error %v, want one containing %q\n%s", strings.Join(tc.args, " "), err, tc.want, out)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("bench wrote %d entries in --dir before refusing", len(entries))
			}
		})
	}
}
