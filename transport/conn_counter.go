package transport

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// NodeCredentials issues the client certificate and key of a node's kubelet, PEM encoded: user
// system:node:<node> in group system:nodes, signed by a CA the apiserver trusts.
type NodeCredentials func(node string) (certPEM, keyPEM []byte, err error)

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

// Counter counts the connections a dialer opened and those still open.
type Counter struct {
	open   atomic.Int64
	dialed [connKinds]atomic.Int64
}

// Open is how many of the connections are open now.
func (c *Counter) Open() int64 { return c.open.Load() }

// Dials is how many connections of every kind were dialed, and by kind.
func (c *Counter) Dials() (int64, Dials) {
	d := Dials{Heartbeat: c.dialed[connHeartbeat].Load(), Watch: c.dialed[connWatch].Load(), ClientGo: c.dialed[connClientGo].Load()}
	return d.Heartbeat + d.Watch + d.ClientGo, d
}

// dialer is a dialer whose connections, of kind, c counts (a nil c counts none). Each call returns a
// new func: client-go caches one transport per TLS configuration unless its config has a dialer, so
// a dialer of its own gives a config its own transport and connections.
func (c *Counter) dialer(kind connKind) func(ctx context.Context, network, addr string) (net.Conn, error) {
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
	c    *Counter
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() { cc.c.open.Add(-1) })
	return cc.Conn.Close()
}
