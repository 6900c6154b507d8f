package wire

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// stallingDialer dials TCP and keeps each connection, whose writes a test can stall: a full
// socket, a server that reads nothing, without depending on the kernel's buffer sizes.
type stallingDialer struct {
	mu    sync.Mutex
	conns []*stallConn
}

func (d *stallingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	sc := &stallConn{Conn: nc, waiting: make(chan struct{}, 16)}
	sc.cond = sync.NewCond(&sc.mu)
	d.mu.Lock()
	d.conns = append(d.conns, sc)
	d.mu.Unlock()
	return sc, nil
}

// conn is the ith connection dialled.
func (d *stallingDialer) conn(i int) *stallConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns[i]
}

// stallConn is a connection whose writes, once stalled, wait for a pass or its Close.
type stallConn struct {
	net.Conn
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	passes  int
	isShut  bool
	waiting chan struct{} // a write began to wait
}

func (c *stallConn) stall() {
	c.mu.Lock()
	c.stalled = true
	c.mu.Unlock()
}

// pass lets n stalled writes through.
func (c *stallConn) pass(n int) {
	c.mu.Lock()
	c.passes += n
	c.mu.Unlock()
	c.cond.Broadcast()
}

// blocked waits until a write waits on the stall.
func (c *stallConn) blocked(t *testing.T) {
	t.Helper()
	select {
	case <-c.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("no write waited on the stalled connection")
	}
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.stalled && c.passes == 0 && !c.isShut {
		c.waiting <- struct{}{}
		for c.passes == 0 && !c.isShut {
			c.cond.Wait()
		}
	}
	if c.passes > 0 {
		c.passes--
	}
	shut := c.isShut
	c.mu.Unlock()
	if shut {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

func (c *stallConn) Close() error {
	c.mu.Lock()
	c.isShut = true
	c.mu.Unlock()
	c.cond.Broadcast()
	return c.Conn.Close()
}
