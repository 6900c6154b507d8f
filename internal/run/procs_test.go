package run

import (
	"testing"
	"time"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/heartbeat"
)

func TestFleetProcsFollowTheHeartbeatRate(t *testing.T) {
	lease := func(nodes int, renew time.Duration) fleet.Config {
		return fleet.Config{Nodes: nodes, Heartbeat: heartbeat.Config{Mode: heartbeat.ModeLease, RenewInterval: renew, StatusUpdateFrequency: 10 * time.Second}}
	}
	status := func(nodes int, every time.Duration) fleet.Config {
		return fleet.Config{Nodes: nodes, Heartbeat: heartbeat.Config{Mode: heartbeat.ModeStatus, RenewInterval: 10 * time.Second, StatusUpdateFrequency: every}}
	}
	for _, tc := range []struct {
		name      string
		cfg       fleet.Config
		available int
		want      int
	}{
		{"one node", lease(1, 10*time.Second), 8, 1},
		{"1000 nodes", lease(1000, 10*time.Second), 8, 1},
		{"5000 nodes, 500 a second", lease(5000, 10*time.Second), 8, 1},
		{"5001 nodes", lease(5001, 10*time.Second), 8, 2},
		{"10000 nodes", lease(10000, 10*time.Second), 8, 2},
		{"10000 nodes on 1 CPU", lease(10000, 10*time.Second), 1, 1},
		{"100000 nodes at 400 s leases", lease(100000, 100*time.Second), 8, 2},
		{"100000 nodes at 40 s leases", lease(100000, 10*time.Second), 8, 8},
		{"status mode counts status updates", status(10000, 5*time.Second), 8, 4},
	} {
		if got := FleetProcs(tc.cfg, tc.available); got != tc.want {
			t.Errorf("%s: FleetProcs = %d, want %d", tc.name, got, tc.want)
		}
	}
}
