package fleet

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
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
	switch ConnectionMode(s) {
	case ConnectionsShared, ConnectionsPerNode:
		return ConnectionMode(s), nil
	}
	return "", fmt.Errorf("unknown connection mode %q (want %q or %q)", s, ConnectionsShared, ConnectionsPerNode)
}

// NodeCredentials issues the client certificate and key of a node's kubelet, PEM encoded: user
// system:node:<node> in group system:nodes, signed by a CA the apiserver trusts.
type NodeCredentials func(node string) (certPEM, keyPEM []byte, err error)

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
	DialedBy     Dials
}

// Dials counts connections dialed by what they carry.
type Dials struct {
	// Heartbeat is the wire connections of the lease renewals and status patches, Watch those of
	// the agents' watches, ClientGo client-go's net/http connections (registration, GETs, pods,
	// Events, CSINodes; with per-node connections, everything).
	Heartbeat, Watch, ClientGo int64
}

func (d Dials) String() string {
	return fmt.Sprintf("%d heartbeat, %d watch, %d client-go", d.Heartbeat, d.Watch, d.ClientGo)
}

// connKind is what a counted connection carries.
type connKind int

const (
	connHeartbeat connKind = iota
	connWatch
	connClientGo
	connKinds
)

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

// connCounter counts the connections a dialer opened and those still open.
type connCounter struct {
	open   atomic.Int64
	dialed [connKinds]atomic.Int64
}

// dialed is how many connections of every kind were dialed, and by kind.
func (c *connCounter) dials() (int64, Dials) {
	d := Dials{Heartbeat: c.dialed[connHeartbeat].Load(), Watch: c.dialed[connWatch].Load(), ClientGo: c.dialed[connClientGo].Load()}
	return d.Heartbeat + d.Watch + d.ClientGo, d
}

// dialer is a dialer whose connections, of kind, c counts (a nil c counts none). Each call returns a
// new func: client-go caches one transport per TLS configuration unless its config has a dialer, so
// a dialer of its own gives a config its own transport and connections.
func (c *connCounter) dialer(kind connKind) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if c == nil {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.dialed[kind].Add(1)
		c.open.Add(1)
		return &countedConn{Conn: conn, c: c}, nil
	}
}

// countedConn takes itself off its counter's open connections when it is first closed.
type countedConn struct {
	net.Conn
	c    *connCounter
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() { cc.c.open.Add(-1) })
	return cc.Conn.Close()
}
