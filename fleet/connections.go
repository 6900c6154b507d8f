package fleet

import (
	"fmt"

	"fakelet.dev/fakelet/internal/enum"
	"fakelet.dev/fakelet/transport"
)

// ConnectionMode is how the agents' requests reach the apiserver.
type ConnectionMode string

const (
	// ConnectionsShared carries every agent's requests over a few sets of connections
	// (Config.Connections), each node's identity in its requests' impersonation headers.
	ConnectionsShared ConnectionMode = "shared"
	// ConnectionsPerNode gives every node a TLS connection of its own for all its traffic, as a
	// kubelet has: one TCP and TLS handshake per node, its identity a client certificate of its own
	// (Config.NodeCredentials) or else impersonation over it.
	ConnectionsPerNode ConnectionMode = "per-node"
)

// ParseConnectionMode checks a connection mode given by a user.
func ParseConnectionMode(s string) (ConnectionMode, error) {
	return enum.Parse("connection mode", s, ConnectionsShared, ConnectionsPerNode)
}

// How a node's requests carry its identity (Connections.Identity).
const (
	IdentityByCertificate   = "client certificate"     // per-node, a certificate of the node's own
	IdentityByImpersonation = "impersonation"          // the fleet's credential, impersonating the node
	IdentityByFleet         = "the fleet's credential" // IdentityFleet: no node identity at all
)

// Connections says how the fleet's agents reach the apiserver and how many connections they hold.
type Connections struct {
	Mode ConnectionMode
	// Identity is how a node's requests say who sent them: IdentityByCertificate,
	// IdentityByImpersonation or IdentityByFleet.
	Identity string
	// Open is the agents' connections open now; Dialed is those ever opened, each with its TCP and
	// TLS handshake, and DialedBy the same by kind of connection. The fleet's own client (its
	// watches, checks and cleanup) is not counted.
	Open, Dialed int64
	DialedBy     transport.Dials
}

// IdentityOf says how the agents of a resolved cfg carry their nodes' identity (Connections.Identity).
func IdentityOf(cfg Config) string {
	switch {
	case cfg.Identity == IdentityFleet:
		return IdentityByFleet
	case cfg.ConnectionMode == ConnectionsPerNode && cfg.NodeCredentials != nil:
		return IdentityByCertificate
	}
	return IdentityByImpersonation
}

func (c Connections) String() string {
	return fmt.Sprintf("%s connections, identity by %s", c.Mode, c.Identity)
}
