package bench

import (
	"strings"
	"testing"
	"time"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/controlplane"
)

func TestPeerTableSetsTheTwoSideBySide(t *testing.T) {
	ms := time.Millisecond
	results := []Result{
		{
			Nodes: 1000, Footprint: agent.FootprintHeartbeat, Window: time.Minute, LeasePUTs: 6000, AllReady: true,
			CPU: map[string]time.Duration{Fakelet: 5436 * ms, controlplane.APIServer: 24000 * ms},
			RSS: map[string]int64{Fakelet: 40 << 20},
			Peer: &PeerResult{
				Name: "kwok", HandOver: 47 * time.Second, Window: time.Minute, LeasePUTs: 5940,
				CPU: map[string]time.Duration{"kwok": 5423 * ms, controlplane.APIServer: 25000 * ms},
				RSS: map[string]int64{"kwok": 120 << 20},
			},
		},
		{
			Nodes: 5000, Window: time.Minute, LeasePUTs: 30000,
			CPU:  map[string]time.Duration{Fakelet: 27 * time.Second, controlplane.APIServer: 90 * time.Second},
			RSS:  map[string]int64{Fakelet: 110 << 20},
			Peer: &PeerResult{Name: "kwok", Err: "kwok did not hold every Lease with every Node Ready within 10m0s"},
		},
	}
	var b strings.Builder
	WritePeerTable(&b, results)
	lines := strings.Split(b.String(), "\n")
	for _, want := range []string{
		"| nodes | fakelet CPU per lease PUT | kwok CPU per lease PUT | kwok / fakelet | fakelet / apiserver CPU | kwok / apiserver CPU | fakelet RSS | kwok RSS | lease PUT/s, fakelet / kwok | kwok took over in |",
		// 5436 ms / 6000 PUTs; 5423 ms / 5940 PUTs; 5436 / 24000; 5423 / 25000.
		"| 1000 | 906 µs | 913 µs | 1.01 | 22.7% | 21.7% | 40 MiB | 120 MiB | 100.0 / 99.0 | 47 s |",
		"| 5000 | 900 µs | failed: kwok did not hold every Lease with every Node Ready within 10m0s | n/a | 30.0% | n/a | 110 MiB | n/a | 500.0 / n/a | n/a |",
		"Each size: fakelet's window in the heartbeat footprint, then kwok keeping the same Nodes and Leases on the same control plane for a window as long. CPU per lease PUT divides the process's CPU time over its window (from /proc) by the lease PUTs the apiserver counted in it; a share of the apiserver's CPU compares their CPU times over the same window.",
	} {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("no line\n%s\nin\n%s", want, b.String())
		}
	}

	b.Reset()
	WritePeerTable(&b, []Result{{Nodes: 10}})
	if b.Len() != 0 {
		t.Errorf("a table without peers: %q", b.String())
	}
}
