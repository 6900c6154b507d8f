package agent

import (
	"slices"
	"testing"
)

// TestTheEmptyFootprintIsTheKubelets: an agent.Config that says no footprint makes the kubelet's
// requests, as a fleet.Config that says none does; before, the agent's empty footprint was the
// heartbeat's and the fleet's the kubelet's.
func TestTheEmptyFootprintIsTheKubelets(t *testing.T) {
	if !Footprint("").Kubelet() || !DefaultFootprint.Kubelet() || FootprintHeartbeat.Kubelet() {
		t.Errorf(`Kubelet(): "" %v, %s %v, %s %v; want true, true, false`, Footprint("").Kubelet(),
			DefaultFootprint, DefaultFootprint.Kubelet(), FootprintHeartbeat, FootprintHeartbeat.Kubelet())
	}
	if got, want := Requests("", true), Requests(FootprintKubelet, true); !slices.Equal(got, want) {
		t.Errorf("the requests of the empty footprint are %d kinds, of the kubelet's %d", len(got), len(want))
	}
}
