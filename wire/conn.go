package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
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

	lastRead atomic.Int64 // when the reader last read a frame, in Unix nanoseconds
	pingSent atomic.Int64 // when the health check's PING went out; 0: none waiting
	health   *time.Timer  // the health check: a timer, not a goroutine; under mu

	// The reader's alone.
	dec         *hpack.Decoder
	cur         *stream // whose header block dec is decoding
	curEnds     bool    // the block's HEADERS frame ended its stream
	recvUnacked uint32  // connection-level bytes consumed and not yet returned
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

// dial opens a connection: TCP, TLS with ALPN h2, the client preface and its SETTINGS. The first
// requests are written without waiting for the server's SETTINGS, as net/http does.
func (c *Client) dial(ctx context.Context) (*conn, error) {
	dial := c.cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	raw, err := dial(ctx, "tcp", c.addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(raw, c.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
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
		maxStreams:    initialMaxStreams,
		sendWindow:    65535,
		initialWindow: 65535,
		maxFrame:      16384,
		nextID:        1,
	}
	cn.fr = http2.NewFramer(cn.bw, bufio.NewReaderSize(tc, 16<<10))
	cn.fr.SetReuseFrames()
	cn.dec = hpack.NewDecoder(4096, cn.emit)
	if _, err := cn.bw.WriteString(http2.ClientPreface); err != nil {
		tc.Close()
		return nil, err
	}
	err = cn.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: c.streamWindow},
	)
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
	cn.lastRead.Store(time.Now().UnixNano())
	cn.mu.Lock()
	cn.health = time.AfterFunc(c.cfg.PingTimeout, cn.checkHealth)
	cn.mu.Unlock()
	go cn.readLoop()
	go cn.writeLoop()
	return cn, nil
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

// enqueue hands the writer an item; it takes cn.mu.
func (cn *conn) enqueue(it item) {
	cn.mu.Lock()
	cn.enqueueLocked(it)
	cn.mu.Unlock()
}

func (cn *conn) enqueueLocked(it item) {
	if cn.err != nil {
		return
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
	s.err = err
	if s.done != nil {
		close(s.done)
	} else {
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

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// readLoop reads frames until the connection fails, and routes each to its stream.
func (cn *conn) readLoop() {
	for {
		f, err := cn.fr.ReadFrame()
		if err == nil {
			cn.lastRead.Store(time.Now().UnixNano())
			err = cn.handle(f)
		}
		if err != nil {
			cn.fail(err) // ends every stream, and the writer with closed
			return
		}
	}
}

func (cn *conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.HeadersFrame:
		cn.cur = cn.lookup(f.StreamID)
		if _, err := cn.dec.Write(f.HeaderBlockFragment()); err != nil {
			return http2.ConnectionError(http2.ErrCodeCompression)
		}
		if f.HeadersEnded() {
			return cn.headersEnded(f.StreamEnded())
		}
		if f.StreamEnded() {
			cn.curEnds = true
		}
	case *http2.ContinuationFrame:
		if _, err := cn.dec.Write(f.HeaderBlockFragment()); err != nil {
			return http2.ConnectionError(http2.ErrCodeCompression)
		}
		if f.HeadersEnded() {
			return cn.headersEnded(cn.curEnds)
		}
	case *http2.DataFrame:
		cn.data(f)
	case *http2.RSTStreamFrame:
		if s := cn.lookup(f.StreamID); s != nil {
			cn.end(s, streamReset(f.StreamID, f.ErrCode), false)
		}
	case *http2.SettingsFrame:
		if !f.IsAck() {
			cn.settings(f)
		}
	case *http2.WindowUpdateFrame:
		cn.windowUpdate(f)
	case *http2.PingFrame:
		if f.IsAck() {
			cn.pingSent.Store(0)
		} else {
			cn.enqueue(item{kind: itemPingAck, ping: f.Data})
		}
	case *http2.GoAwayFrame:
		cn.goAwayFrom(f)
	case *http2.PushPromiseFrame:
		return http2.ConnectionError(http2.ErrCodeProtocol) // push is disabled in our SETTINGS
	}
	return nil
}

func (cn *conn) lookup(id uint32) *stream {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.streams[id]
}

// emit keeps the response headers a Kubernetes client reads.
func (cn *conn) emit(f hpack.HeaderField) {
	s := cn.cur
	if s == nil || s.headersDone {
		return // another stream's, or trailers
	}
	switch f.Name {
	case ":status":
		s.resp.Status, _ = strconv.Atoi(f.Value)
	case "content-type":
		s.resp.ContentType = f.Value
	case "retry-after":
		s.resp.RetryAfter = f.Value
	case "content-encoding":
		s.resp.ContentEncoding = f.Value
	}
}

func (cn *conn) headersEnded(endStream bool) error {
	if err := cn.dec.Close(); err != nil {
		return http2.ConnectionError(http2.ErrCodeCompression)
	}
	s := cn.cur
	cn.cur, cn.curEnds = nil, false
	if s == nil {
		return nil
	}
	if !s.headersDone {
		if s.resp.Status >= 100 && s.resp.Status < 200 && !endStream {
			s.resp = Response{} // informational: the answer's own headers follow
			return nil
		}
		s.headersDone = true
		if s.resp.Status == 0 {
			cn.end(s, errors.New("http2: response headers without :status"), true)
			return nil
		}
		if s.h != nil && s.h.OnResponse != nil {
			if err := cn.callback(s, func() error { return s.h.OnResponse(&s.resp) }); err != nil {
				cn.end(s, err, true)
				return nil
			}
		}
	}
	if endStream {
		cn.end(s, nil, false)
	}
	return nil
}

// callback runs a stream handler unless the stream has ended meanwhile (its context, say).
func (cn *conn) callback(s *stream, f func() error) error {
	s.cbMu.Lock()
	defer s.cbMu.Unlock()
	if s.cbEnded {
		return nil
	}
	return f()
}

// data hands a DATA frame to its stream and gives the server back the window it used once consumed.
func (cn *conn) data(f *http2.DataFrame) {
	n := f.Header().Length // padding counts against the window too
	s := cn.lookup(f.StreamID)
	var err error
	if s != nil && !s.headersDone {
		err = http2.StreamError{StreamID: f.StreamID, Code: http2.ErrCodeProtocol, Cause: errors.New("DATA before response headers")}
	} else if s != nil {
		s.resp.WireBytes += int64(len(f.Data()))
		if s.h == nil {
			s.resp.Body = append(s.resp.Body, f.Data()...)
		} else if len(f.Data()) > 0 {
			err = cn.callback(s, func() error { return s.h.OnData(f.Data()) })
		}
	}
	cn.recvUnacked += n
	var conn uint32
	if cn.recvUnacked >= connWindow/2 {
		conn, cn.recvUnacked = cn.recvUnacked, 0
	}
	var strm uint32
	if s != nil && !f.StreamEnded() && err == nil {
		s.unacked += n
		if s.unacked >= cn.client.streamWindow/2 {
			strm, s.unacked = s.unacked, 0
		}
	}
	if conn > 0 || strm > 0 {
		cn.mu.Lock()
		if conn > 0 {
			cn.enqueueLocked(item{kind: itemWindow, incr: conn})
		}
		if strm > 0 && !s.ended {
			cn.enqueueLocked(item{kind: itemWindow, id: s.id, incr: strm})
		}
		cn.mu.Unlock()
	}
	switch {
	case s == nil:
	case err != nil:
		cn.end(s, err, true)
	case f.StreamEnded():
		cn.end(s, nil, false)
	}
}

func (cn *conn) settings(f *http2.SettingsFrame) {
	cn.mu.Lock()
	_ = f.ForeachSetting(func(st http2.Setting) error {
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			cn.maxStreams = int(min(st.Val, 1<<20))
		case http2.SettingInitialWindowSize:
			delta := int32(st.Val) - cn.initialWindow
			cn.initialWindow = int32(st.Val)
			for _, s := range cn.streams {
				s.sendWindow += delta
			}
		case http2.SettingMaxFrameSize:
			cn.maxFrame = int(st.Val)
		case http2.SettingHeaderTableSize:
			cn.enqueueLocked(item{kind: itemTableSize, incr: st.Val})
		}
		return nil
	})
	cn.enqueueLocked(item{kind: itemSettingsAck})
	cn.enqueueLocked(item{kind: itemKick})
	cn.mu.Unlock()
}

func (cn *conn) windowUpdate(f *http2.WindowUpdateFrame) {
	cn.mu.Lock()
	if f.StreamID == 0 {
		cn.sendWindow += int32(f.Increment)
	} else if s := cn.streams[f.StreamID]; s != nil {
		s.sendWindow += int32(f.Increment)
	}
	cn.enqueueLocked(item{kind: itemKick})
	cn.mu.Unlock()
}

// errConnLost is net/http's error for a connection whose health check PING went unanswered.
var errConnLost = errors.New("http2: client connection lost")

// checkHealth runs every PingTimeout: it sends a PING when the connection has read nothing for
// ReadIdleTimeout, and fails the connection when the PING is not answered within PingTimeout, as
// client-go's HTTP/2 transport does.
func (cn *conn) checkHealth() {
	cfg := &cn.client.cfg
	now := time.Now().UnixNano()
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
		cn.health.Reset(cfg.PingTimeout)
	}
	cn.mu.Unlock()
}

// goAwayFrom stops new streams on the connection; the server will not answer those above its last
// stream ID, which Client sends again on a new connection.
func (cn *conn) goAwayFrom(f *http2.GoAwayFrame) {
	cn.mu.Lock()
	cn.goAway = &goAway{last: f.LastStreamID, code: f.ErrCode, debug: string(f.DebugData())}
	var refused []*stream
	for id, s := range cn.streams {
		if id > f.LastStreamID {
			refused = append(refused, s)
		}
	}
	cn.mu.Unlock()
	cn.client.forget(cn)
	for _, s := range refused {
		cn.end(s, retryable{errGotGoAway}, false)
	}
	cn.mu.Lock()
	drained := cn.active == 0
	cn.mu.Unlock()
	if drained {
		cn.fail(errDrained)
	}
}
