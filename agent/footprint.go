package agent

import "fakelet.dev/fakelet/internal/enum"

// Footprint is which of a kubelet's requests an agent makes.
type Footprint string

const (
	// FootprintKubelet makes every request a v1.37 kubelet makes: the heartbeats, the watches its
	// reflectors open, its startup requests and Events, and the status manager's pod requests.
	FootprintKubelet Footprint = "kubelet"
	// FootprintHeartbeat makes the heartbeat requests only (registration, Lease, node status) and
	// reports the fleet's pods, as fakelet did before the kubelet footprint.
	FootprintHeartbeat Footprint = "heartbeat"
)

// ParseFootprint checks a footprint given by a user.
func ParseFootprint(s string) (Footprint, error) {
	return enum.Parse("footprint", s, FootprintKubelet, FootprintHeartbeat)
}
