package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/utils/clock"
)

// conn is one HTTP/2 connection: its streams, its writer's queue, and both goroutines' state.
type conn struct {
	client *Client
	nc     net.Conn
	fr     *http2.Framer
	bw     *bufio.Writer
	wake   chan struct{} // the writer has work: capacity 1
	closed chan struct{} // closed once err is set

	mu            sync.Mutex
	err           error // why the connection ended; nil while it is usable
	streams       map[uint32]*stream
	active        int // streams reserved: queued or open
	maxStreams    int // the server's MAX_CONCURRENT_STREAMS
	goAway        *goAway
	queue         []item // for the writer
	sendWindow    int32  // the connection's send window
	initialWindow int32  // the server's initial stream window
	maxFrame      int    // the server's MAX_FRAME_SIZE
	nextID        uint32 // the writer's next stream ID; read by reserve

	control    int  // acknowledgements and table sizes queued: at most maxQueuedControlFrames
	kickQueued bool // an itemKick is queued: one does for every window that grew meanwhile
	overflowed bool // past maxQueuedControlFrames: failing

	lastRead  atomic.Int64 // when the reader last read a frame, in Unix nanoseconds
	batchFrom atomic.Int64 // when the writer took the batch it is writing; 0: it waits for work
	pingSent  atomic.Int64 // when the health check's PING went out; 0: none waiting
	health    clock.Timer  // the health check: a timer, not a goroutine; under mu

	readerState // the reader's alone (read_limits.go)
}

// goAway is what a connection keeps of the server's GOAWAY.
type goAway struct {
	last  uint32
	code  http2.ErrCode
	debug string
}

// initialMaxStreams is what net/http assumes of a server before its SETTINGS arrive.
const initialMaxStreams = 100

// connWindow is the connection's receive window: room for every stream's window at once is not
// needed, streams are consumed as they arrive.
const connWindow = 1 << 24

// lastStreamID is where a connection stops taking new streams: HTTP/2 stream IDs are 31 bits.
const lastStreamID = 1<<31 - 1

// dialTimeout bounds a TCP dial, as net/http's default transport's dialer does.
const dialTimeout = 30 * time.Second

// tlsHandshakeTimeout bounds a TLS handshake, as client-go's transport does (and net/http's
// default transport).
const tlsHandshakeTimeout = 10 * time.Second

// errTLSHandshakeTimeout is net/http's error for a handshake past its timeout.
var errTLSHandshakeTimeout = errors.New("net/http: TLS handshake timeout")

// dial opens a connection: TCP, TLS with ALPN h2, the client preface and its SETTINGS. The first
// requests are written without waiting for the server's SETTINGS, as net/http does.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	dial := c.cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout) // a Config.Dial of its own has no timeout
	var raw net.Conn
	var err error
	if c.cfg.Proxy != nil {
		raw, err = c.dialProxy(dctx, dial)
	} else {
		raw, err = dial(dctx, "tcp", c.addr)
	}
	cancel()
	if err != nil {
		return nil, err
	}
	tc := tls.Client(raw, c.tls)
	hctx, cancel := context.WithTimeout(ctx, c.cfg.handshakeTimeout)
	err = tc.HandshakeContext(hctx)
	cancel()
	if err != nil {
		raw.Close()
		if hctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			err = errTLSHandshakeTimeout
		}
		return nil, err
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
		tc.Close()
		return nil, fmt.Errorf("the server at %s does not speak HTTP/2 (ALPN %q)", c.addr, p)
	}
	cn := &conn{
		client:        c,
		nc:            tc,
		bw:            bufio.NewWriterSize(tc, 16<<10),
		wake:          make(chan struct{}, 1),
		closed:        make(chan struct{}),
		streams:       map[uint32]*stream{},
		maxStreams:    c.assumedMaxStreams(),
		sendWindow:    65535,
		initialWindow: 65535,
		maxFrame:      16384,
		nextID:        1,
	}
	cn.fr = http2.NewFramer(cn.bw, bufio.NewReaderSize(tc, 16<<10))
	cn.limitReads()
	if _, err := cn.bw.WriteString(http2.ClientPreface); err != nil {
		tc.Close()
		return nil, err
	}
	err = cn.fr.WriteSettings(append(readSettings(),
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: c.streamWindow},
	)...)
	if err == nil {
		err = cn.fr.WriteWindowUpdate(0, connWindow-65535)
	}
	if err == nil {
		err = cn.bw.Flush()
	}
	if err != nil {
		tc.Close()
		return nil, err
	}
	cn.lastRead.Store(c.clock.Now().UnixNano())
	cn.mu.Lock()
	cn.scheduleHealth(c.cfg.PingTimeout)
	cn.mu.Unlock()
	go cn.readLoop()
	go cn.writeLoop()
	return cn, nil
}

// assumedMaxStreams is what a new connection assumes of the server's MAX_CONCURRENT_STREAMS until
// its SETTINGS arrive: what the oldest connection's said, else net/http's assumption. A server
// with a lower limit would otherwise refuse what a new connection sends above it.
func (c *Client) assumedMaxStreams() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.conns) == 0 {
		return initialMaxStreams
	}
	cn := c.conns[0]
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.maxStreams
}

// reserve takes a place for one more stream, if the connection has one.
func (cn *conn) reserve() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err != nil || cn.goAway != nil || cn.active >= cn.maxStreams || cn.nextID+2*uint32(cn.active) >= lastStreamID {
		return false
	}
	cn.active++
	return true
}

// takesNone says whether the server has said it takes no stream on this connection
// (MAX_CONCURRENT_STREAMS 0).
func (cn *conn) takesNone() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.maxStreams == 0
}

// enqueue hands the writer an item; it takes cn.mu.
func (cn *conn) enqueue(it item) {
	cn.mu.Lock()
	cn.enqueueLocked(it)
	cn.mu.Unlock()
}

// send queues s's request for the writer. On a connection that has failed since s reserved its
// place, s ends at once with an error that sends it again on another connection: the failure has
// ended every stream it knew of, and nothing would end this one.
func (cn *conn) send(s *stream) {
	cn.mu.Lock()
	err := cn.err
	if err == nil {
		cn.enqueueLocked(item{kind: itemOpen, s: s})
	}
	cn.mu.Unlock()
	if err != nil {
		cn.end(s, retryable{err}, false)
	}
}

// maxQueuedControlFrames bounds the frames the reader queues in answer to the server's (PING and
// SETTINGS acknowledgements), as x/net's server bounds its own: a server that sends them faster
// than it reads the answers is failed rather than allowed to grow the queue without end.
const maxQueuedControlFrames = 10000

var errTooManyControlFrames = fmt.Errorf("http2: more than %d PING and SETTINGS acknowledgements queued unwritten: the server sends them faster than it reads", maxQueuedControlFrames)

// enqueueLocked drops what a failed connection would write: streams go through send, which ends
// them instead.
func (cn *conn) enqueueLocked(it item) {
	if cn.err != nil {
		return
	}
	switch it.kind {
	case itemPingAck, itemSettingsAck, itemTableSize:
		if cn.control >= maxQueuedControlFrames {
			if !cn.overflowed {
				cn.overflowed = true
				go cn.fail(errTooManyControlFrames) // it takes cn.mu
			}
			return
		}
		cn.control++
	case itemKick:
		if cn.kickQueued {
			return
		}
		cn.kickQueued = true
	}
	cn.queue = append(cn.queue, it)
	select {
	case cn.wake <- struct{}{}:
	default:
	}
}

// end finishes s with err, once: it leaves the connection (with a RST_STREAM if it is open and
// reset is set) and its caller learns the outcome. It reports whether this call ended it.
func (cn *conn) end(s *stream, err error, reset bool) bool {
	cn.mu.Lock()
	if s.ended {
		cn.mu.Unlock()
		return false
	}
	s.ended = true
	cn.active--
	if s.id != 0 {
		delete(cn.streams, s.id)
		if reset {
			cn.enqueueLocked(item{kind: itemReset, id: s.id, code: http2.ErrCodeCancel})
		}
	}
	drained := cn.goAway != nil && cn.active == 0 && cn.err == nil
	cn.mu.Unlock()
	cn.client.wake() // its place is free
	s.err = err
	switch {
	case s.done != nil:
		close(s.done)
	case s.send != nil:
		s.send.sent()
	default:
		s.cbMu.Lock()
		s.cbEnded = true
		stop := s.stopCtx
		s.h.OnEnd(err)
		s.cbMu.Unlock()
		if stop != nil {
			stop()
		}
	}
	if drained {
		cn.fail(errDrained)
	}
	return true
}

// errDrained ends a connection whose server sent GOAWAY once its last stream is done.
var errDrained = errors.New("http2: connection drained after GOAWAY")

// fail ends the connection: every stream fails with err, or, if it was never written, with an
// error that lets Client send it again on another connection.
func (cn *conn) fail(err error) {
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return
	}
	if cn.goAway != nil && (errors.Is(err, io.EOF) || isNetError(err)) {
		err = http2.GoAwayError{LastStreamID: cn.goAway.last, ErrCode: cn.goAway.code, DebugData: cn.goAway.debug}
	} else if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	cn.err = err
	cn.health.Stop()
	var open []*stream
	for _, s := range cn.streams {
		open = append(open, s)
	}
	var unsent []*stream
	for _, it := range cn.queue {
		if it.kind == itemOpen {
			unsent = append(unsent, it.s)
		}
	}
	cn.queue = nil
	cn.mu.Unlock()
	close(cn.closed)
	cn.nc.Close()
	cn.client.forget(cn)
	for _, s := range open {
		cn.end(s, err, false)
	}
	for _, s := range unsent {
		cn.end(s, retryable{err}, false)
	}
}

// failure is why the connection ended.
func (cn *conn) failure() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}

// abandon ends the requests of items the writer took from the queue and will not write, the
// connection having failed: they go again on another connection.
func (cn *conn) abandon(items []item) {
	cn.mu.Lock()
	err := cn.err
	cn.mu.Unlock()
	for _, it := range items {
		if it.kind == itemOpen {
			cn.end(it.s, retryable{err}, false)
		}
	}
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// errConnLost is net/http's error for a connection whose health check PING went unanswered.
var errConnLost = errors.New("http2: client connection lost")

// errWriteStuck fails a connection whose writer has been on one batch for the ping timeout: a
// server that reads nothing (while it may go on sending: PINGs, say) holds every request written
// to it.
type errWriteStuck struct{ d time.Duration }

func (e errWriteStuck) Error() string {
	return fmt.Sprintf("http2: the connection's writes stuck for %v: the server reads nothing", e.d)
}

// checkHealth runs every PingTimeout: it sends a PING when the connection has read nothing for
// ReadIdleTimeout, and fails the connection when the PING is not answered within PingTimeout, as
// client-go's HTTP/2 transport does; and it fails the connection when its writer has been on the
// same batch for PingTimeout, which reads alone do not show.
func (cn *conn) checkHealth() {
	cfg := &cn.client.cfg
	now := cn.client.clock.Now().UnixNano()
	next := cfg.PingTimeout
	if from := cn.batchFrom.Load(); from != 0 {
		stuck := time.Duration(now - from)
		if stuck >= cfg.PingTimeout {
			cn.fail(errWriteStuck{stuck})
			return
		}
		next = cfg.PingTimeout - stuck // so that a writer stuck is failed at the timeout, not twice it
	}
	switch sent := cn.pingSent.Load(); {
	case sent != 0 && now-sent >= int64(cfg.PingTimeout):
		cn.fail(errConnLost)
		return
	case sent == 0 && now-cn.lastRead.Load() >= int64(cfg.ReadIdleTimeout):
		cn.pingSent.Store(now)
		cn.enqueue(item{kind: itemPing})
	}
	cn.mu.Lock()
	if cn.err == nil {
		cn.scheduleHealth(next)
	}
	cn.mu.Unlock()
}

// scheduleHealth runs checkHealth in d, on a goroutine of its own: a fake clock runs the function
// while it holds its lock, which checkHealth's reads of the clock would wait for. Each check is a
// timer of its own rather than one Reset: a fake clock's timer fired again blocks on the channel it
// filled the first time, which no one reads. Under mu.
func (cn *conn) scheduleHealth(d time.Duration) {
	cn.health = cn.client.clock.AfterFunc(d, func() { go cn.checkHealth() })
}
