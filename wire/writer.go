package wire

import (
	"strconv"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"k8s.io/utils/clock"
)

// item is one thing for the writer to write.
type item struct {
	kind itemKind
	s    *stream
	id   uint32
	code http2.ErrCode
	incr uint32
	ping [8]byte
}

type itemKind uint8

const (
	itemOpen        itemKind = iota // a request: HEADERS, then its body as the windows allow
	itemKick                        // the send windows grew: write what waits for them
	itemReset                       // RST_STREAM of a stream its caller gave up on
	itemWindow                      // WINDOW_UPDATE: what a stream (id 0: the connection) consumed
	itemPing                        // the health check's PING
	itemPingAck                     // answer the server's PING
	itemSettingsAck                 // acknowledge the server's SETTINGS
	itemTableSize                   // the server's HEADER_TABLE_SIZE
)

// writer is the state only the writer goroutine touches.
type writer struct {
	cn      *conn
	enc     *hpack.Encoder
	block   headerBuffer
	blocked []*stream // streams whose body waits for a window
	auth    []Field
	authAt  time.Time
	authGen uint64 // the Client's authGen when auth was read
	last    uint32 // the newest stream it opened
}

func newWriter(cn *conn) *writer {
	w := &writer{cn: cn}
	w.enc = hpack.NewEncoder(&w.block)
	return w
}

// writerEvent is what a writer tells Config.observe: it holds the frames written since held on its
// flush timer, armed for held plus the window, or (held zero) it has flushed them. last is the
// newest stream it has opened, so that a test knows which requests the event covers.
type writerEvent struct {
	held time.Time
	last uint32
}

// flush writes out what the buffered writer holds.
func (w *writer) flush() error {
	if err := w.cn.bw.Flush(); err != nil {
		return err
	}
	if obs := w.cn.client.cfg.observe; obs != nil {
		obs(writerEvent{last: w.last})
	}
	return nil
}

type headerBuffer struct{ b []byte }

func (h *headerBuffer) Write(p []byte) (int, error) { h.b = append(h.b, p...); return len(p), nil }

// writeLoop writes what the queue holds, as it comes. Frames written together leave together: the
// buffered writer is flushed when the queue is empty (after holding them up to the flush window for
// more) or, when the queue never empties, once the oldest unflushed frame has waited the window.
// Frames that came alone, with nothing queued in the window before them, are flushed at once: on a
// connection whose requests are further apart than the window, holding them would only cost a
// timer's wakeup each and share no write.
func (cn *conn) writeLoop() {
	w := newWriter(cn)
	window := cn.client.cfg.FlushWindow
	bound := window
	if bound == 0 {
		bound = MaxFlushWindow
	}
	var batch []item
	clk := cn.client.clock
	var held time.Time  // when the oldest unflushed frame was written; zero: none
	var taken time.Time // when the writer last took frames from its queue
	alone := false      // the unflushed frames came with nothing taken in the window before them
	var timer clock.Timer
	for {
		cn.mu.Lock()
		for len(cn.queue) == 0 && cn.err == nil {
			cn.mu.Unlock()
			if !held.IsZero() && (window == 0 || alone || clk.Since(held) >= window) {
				cn.batchFrom.CompareAndSwap(0, clk.Now().UnixNano()) // a flush after the window's wait
				if err := w.flush(); err != nil {
					cn.fail(err)
					return
				}
				held = time.Time{}
			} else if !held.IsZero() {
				if timer == nil {
					timer = clk.NewTimer(window - clk.Since(held))
				} else {
					timer.Reset(window - clk.Since(held))
				}
				cn.batchFrom.Store(0) // it waits: for work, not on the socket
				if obs := cn.client.cfg.observe; obs != nil {
					obs(writerEvent{held: held, last: w.last})
				}
				select {
				case <-cn.wake:
				case <-timer.C():
				case <-cn.closed:
				}
				if !timer.Stop() {
					// It fired, perhaps as the writer woke for something else: a value left in
					// its channel (k8s.io/utils' clock.Timer keeps it) would end the next wait at
					// once, or block the clock that fires it again.
					select {
					case <-timer.C():
					default:
					}
				}
			} else {
				cn.batchFrom.Store(0)
				select {
				case <-cn.wake:
				case <-cn.closed:
				}
			}
			cn.mu.Lock()
		}
		if cn.err != nil {
			cn.mu.Unlock()
			return
		}
		batch, cn.queue = cn.queue, batch[:0]
		cn.control, cn.kickQueued = 0, false
		cn.mu.Unlock()
		now := clk.Now()
		cn.batchFrom.Store(now.UnixNano())
		if held.IsZero() {
			held = now
			alone = taken.IsZero() || now.Sub(taken) >= bound
		} else {
			alone = false
		}
		taken = now
		for i := range batch {
			if err := w.write(&batch[i]); err != nil {
				cn.fail(err)
				cn.abandon(batch[i+1:])
				return
			}
			batch[i] = item{}
		}
		if clk.Since(held) >= bound {
			if err := w.flush(); err != nil {
				cn.fail(err)
				return
			}
			held = time.Time{}
		}
	}
}

func (w *writer) write(it *item) error {
	fr := w.cn.fr
	switch it.kind {
	case itemOpen:
		return w.open(it.s)
	case itemKick:
		w.cn.client.wake() // the SETTINGS that kicked may have raised MAX_CONCURRENT_STREAMS
		blocked := w.blocked
		w.blocked = nil
		for _, s := range blocked {
			if err := w.body(s); err != nil {
				return err
			}
		}
	case itemReset:
		return fr.WriteRSTStream(it.id, it.code)
	case itemWindow:
		return fr.WriteWindowUpdate(it.id, it.incr)
	case itemPing:
		return fr.WritePing(false, [8]byte{'f', 'a', 'k', 'e', 'l', 'e', 't'})
	case itemPingAck:
		return fr.WritePing(true, it.ping)
	case itemSettingsAck:
		return fr.WriteSettingsAck()
	case itemTableSize:
		w.enc.SetMaxDynamicTableSizeLimit(it.incr)
	}
	return nil
}

// open writes a request's HEADERS, and its body as far as the windows allow.
func (w *writer) open(s *stream) error {
	cn := w.cn
	cn.mu.Lock()
	if s.ended {
		cn.mu.Unlock()
		return nil // its caller gave up before it was written
	}
	if err := cn.err; err != nil {
		// The connection failed after the writer took s from the queue, and ended the streams it
		// had then: s is not among them.
		cn.mu.Unlock()
		cn.end(s, retryable{err}, false)
		return nil
	}
	if cn.goAway != nil {
		cn.mu.Unlock()
		cn.end(s, retryable{errGotGoAway}, false)
		return nil
	}
	s.id = cn.nextID
	w.last = s.id
	cn.nextID += 2
	s.sendWindow = cn.initialWindow
	s.body = s.req.Body
	cn.streams[s.id] = s
	maxFrame := cn.maxFrame
	cn.mu.Unlock()

	if err := w.encode(s.req); err != nil {
		cn.end(s, err, false)
		return nil
	}
	block := w.block.b
	endStream := len(s.req.Body) == 0
	first := block[:min(len(block), maxFrame)]
	block = block[len(first):]
	err := cn.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: first, EndStream: endStream, EndHeaders: len(block) == 0})
	for err == nil && len(block) > 0 {
		next := block[:min(len(block), maxFrame)]
		block = block[len(next):]
		err = cn.fr.WriteContinuation(s.id, len(block) == 0, next)
	}
	if err != nil || endStream {
		return err
	}
	return w.body(s)
}

// body writes as much of s's body as the connection's and the stream's send windows allow; the rest
// waits for a WINDOW_UPDATE.
func (w *writer) body(s *stream) error {
	cn := w.cn
	for {
		cn.mu.Lock()
		if s.ended || len(s.body) == 0 {
			cn.mu.Unlock()
			return nil
		}
		n := min(int32(len(s.body)), cn.sendWindow, s.sendWindow, int32(cn.maxFrame))
		if n <= 0 {
			cn.mu.Unlock()
			w.blocked = append(w.blocked, s)
			return nil
		}
		cn.sendWindow -= n
		s.sendWindow -= n
		chunk := s.body[:n]
		s.body = s.body[n:]
		last := len(s.body) == 0
		id := s.id
		cn.mu.Unlock()
		if err := cn.fr.WriteData(id, last, chunk); err != nil {
			return err
		}
	}
}

// encode writes req's header block into w.block with the connection's encoder: its dynamic table
// turns the fields every request repeats (authority, credentials, user agent, content type,
// impersonation of a node seen recently) into an index of a byte or two.
func (w *writer) encode(req *Request) error {
	c := w.cn.client
	if gen := c.authGen.Load(); c.cfg.Auth != nil && (c.clock.Since(w.authAt) >= AuthRefresh || gen != w.authGen) {
		auth, err := c.cfg.Auth()
		if err != nil {
			return err
		}
		w.auth, w.authAt, w.authGen = auth, c.clock.Now(), gen
	}
	w.block.b = w.block.b[:0]
	e := w.enc
	method := req.Method
	if method == "" {
		method = "GET"
	}
	field(e, ":method", method)
	field(e, ":scheme", "https")
	field(e, ":authority", c.authority)
	literal(e, ":path", req.Path)
	own := hasImpersonation(req.Header) || hasImpersonation(req.Own)
	for _, f := range w.auth {
		if !impersonates(f.Name) || !own {
			field(e, f.Name, f.Value)
		}
	}
	for _, f := range req.Header {
		field(e, f.Name, f.Value)
	}
	for _, f := range req.Own {
		literal(e, f.Name, f.Value)
	}
	if len(req.Body) > 0 {
		literal(e, "content-length", strconv.Itoa(len(req.Body)))
	}
	if !c.cfg.DisableCompression {
		field(e, "accept-encoding", "gzip")
	}
	return nil
}

func field(e *hpack.Encoder, name, value string) {
	_ = e.WriteField(hpack.HeaderField{Name: name, Value: value}) // writes to a byte slice: no error
}

// literal writes a field as a literal that is never indexed.
func literal(e *hpack.Encoder, name, value string) {
	_ = e.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: true})
}

func impersonates(name string) bool { return len(name) > 12 && name[:12] == "impersonate-" }

// hasImpersonation says whether the request names its own identity, which replaces the config's.
func hasImpersonation(h []Field) bool {
	for _, f := range h {
		if impersonates(f.Name) {
			return true
		}
	}
	return false
}
