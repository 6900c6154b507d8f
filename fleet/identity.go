package fleet

import "fakelet.dev/fakelet/internal/enum"

// Identity is whose credential a fake kubelet's requests carry.
type Identity string

const (
	// IdentityNode impersonates system:node:<name> in group system:nodes, as a kubelet's client
	// certificate would: the Node authorizer, NodeRestriction admission and API Priority and Fairness
	// (priority level node-high) treat the requests as a kubelet's.
	IdentityNode Identity = "node"
	// IdentityFleet sends everything as the fleet's own credential, for raw throughput: an admin
	// credential lands in the exempt priority level and skips node authorization.
	IdentityFleet Identity = "fleet"
)

// ParseIdentity checks an identity given by a user.
func ParseIdentity(s string) (Identity, error) {
	return enum.Parse("identity", s, IdentityNode, IdentityFleet)
}
