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

// DefaultFootprint is the kubelet's whole footprint, which the empty Footprint is, in an agent's
// Config as in a fleet's: a fleet that leaves out the kubelets' watches, startup requests and Events
// understates what a control plane spends on its kubelets (issue 15). FootprintHeartbeat is there
// for runs that measure the heartbeats alone.
const DefaultFootprint = FootprintKubelet

// Kubelet says whether f is the kubelet's whole footprint, as the empty Footprint is.
func (f Footprint) Kubelet() bool { return f != FootprintHeartbeat }

// ParseFootprint checks a footprint given by a user.
func ParseFootprint(s string) (Footprint, error) {
	return enum.Parse("footprint", s, FootprintKubelet, FootprintHeartbeat)
}
