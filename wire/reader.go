package wire

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// readLoop reads frames until the connection fails, and routes each to its stream.
func (cn *conn) readLoop() {
	for {
		if err := cn.readFrame(); err != nil {
			cn.fail(err) // ends every stream, and the writer with closed
			return
		}
	}
}

// readFrame reads and handles one frame. A frame is a sign of life for the health check unless it
// is part of a header block that has not ended: a block's CONTINUATION frames can come forever at
// no cost to the server, and a PING's answer cannot come before the block ends.
func (cn *conn) readFrame() error {
	fh, err := cn.fr.ReadFrameHeader()
	if err != nil {
		return cn.readError(fh, err)
	}
	f, err := cn.fr.ReadFrameForHeader(fh)
	if err != nil {
		return cn.frameError(fh, err)
	}
	if err := cn.handle(f); err != nil {
		return err
	}
	if !cn.inBlock {
		cn.lastRead.Store(cn.client.clock.Now().UnixNano())
	}
	return nil
}

// frameError is what becomes of a frame the Framer refused: a stream's WINDOW_UPDATE of 0 fails
// that stream only; the Framer's other stream errors (the padding of a HEADERS frame) would leave
// the HPACK state behind, and fail the connection.
func (cn *conn) frameError(fh http2.FrameHeader, err error) error {
	if se, ok := err.(http2.StreamError); ok && fh.Type == http2.FrameWindowUpdate {
		if s := cn.lookup(se.StreamID); s != nil {
			cn.resetStream(s, se)
		}
		return nil
	}
	return cn.readError(fh, err)
}

func (cn *conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.HeadersFrame:
		cn.cur = cn.lookup(f.StreamID)
		cn.curEnds = f.StreamEnded()
		cn.inBlock, cn.blockID = true, f.StreamID
		cn.blockLeft, cn.listLeft, cn.listOver = maxHeaderListSize, maxHeaderListSize, false
		return cn.fragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		return cn.fragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.DataFrame:
		return cn.data(f)
	case *http2.RSTStreamFrame:
		if s := cn.lookup(f.StreamID); s != nil {
			cn.end(s, streamReset(f.StreamID, f.ErrCode), false)
		}
	case *http2.SettingsFrame:
		if !f.IsAck() {
			return cn.settings(f)
		}
	case *http2.WindowUpdateFrame:
		return cn.windowUpdate(f)
	case *http2.PingFrame:
		if f.IsAck() {
			cn.pingSent.Store(0)
		} else {
			cn.enqueue(item{kind: itemPingAck, ping: f.Data})
		}
	case *http2.GoAwayFrame:
		cn.goAwayFrom(f)
	case *http2.PushPromiseFrame:
		return connErrorf(http2.ErrCodeProtocol, "the server sent PUSH_PROMISE on stream %d, which the client's SETTINGS disable", f.StreamID)
	}
	return nil
}

// fragment decodes a piece of a header block. Both the block's bytes and what they decode to are
// bounded: a field indexed again costs the server a byte and decodes to the whole field.
func (cn *conn) fragment(frag []byte, end bool) error {
	if len(frag) > cn.blockLeft {
		return connErrorf(http2.ErrCodeProtocol, "the header block of stream %d is above the %d bytes of SETTINGS_MAX_HEADER_LIST_SIZE",
			cn.blockID, maxHeaderListSize)
	}
	cn.blockLeft -= len(frag)
	if _, err := cn.dec.Write(frag); err != nil {
		if errors.Is(err, hpack.ErrStringLength) {
			return connErrorf(http2.ErrCodeCompression, "a header of stream %d holds a string above the %d bytes of SETTINGS_MAX_HEADER_LIST_SIZE",
				cn.blockID, maxHeaderListSize)
		}
		return connErrorf(http2.ErrCodeCompression, "the header block of stream %d: %v", cn.blockID, err)
	}
	if cn.listOver {
		return connErrorf(http2.ErrCodeProtocol, "the header list of stream %d decodes to more than the %d bytes of SETTINGS_MAX_HEADER_LIST_SIZE",
			cn.blockID, maxHeaderListSize)
	}
	if end {
		return cn.headersEnded()
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
	size := f.Size()
	if cn.listOver || size > cn.listLeft {
		cn.listOver = true
		return
	}
	cn.listLeft -= size
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
	case "content-length":
		s.length, _ = strconv.Atoi(f.Value)
	}
}

func (cn *conn) headersEnded() error {
	if err := cn.dec.Close(); err != nil {
		return connErrorf(http2.ErrCodeCompression, "the header block of stream %d: %v", cn.blockID, err)
	}
	s, endStream := cn.cur, cn.curEnds
	cn.cur, cn.curEnds, cn.inBlock = nil, false, false
	if s == nil {
		return nil
	}
	if !s.headersDone {
		if s.resp.Status >= 100 && s.resp.Status < 200 && !endStream {
			s.resp = Response{} // informational: the answer's own headers follow
			if s.informed++; s.informed > max1xx {
				cn.end(s, fmt.Errorf("http2: more than %d informational answers to one request", max1xx), true)
			}
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
// A server that sends past the window it was given breaks flow control (RFC 9113 §6.9.1).
func (cn *conn) data(f *http2.DataFrame) error {
	n := f.Header().Length // padding counts against the window too
	if left := connWindow - cn.recvUnacked; n > left {
		return connErrorf(http2.ErrCodeFlowControl, "the server sent %d bytes of DATA on stream %d, above the %d left of the connection's receive window",
			n, f.StreamID, left)
	}
	s := cn.lookup(f.StreamID)
	var err error
	switch {
	case s == nil:
	case n > cn.client.streamWindow-s.unacked:
		err = http2.StreamError{StreamID: f.StreamID, Code: http2.ErrCodeFlowControl,
			Cause: fmt.Errorf("%d bytes of DATA, above the %d left of the stream's receive window of %d", n, cn.client.streamWindow-s.unacked, cn.client.streamWindow)}
	case !s.headersDone:
		err = http2.StreamError{StreamID: f.StreamID, Code: http2.ErrCodeProtocol, Cause: errors.New("DATA before response headers")}
	default:
		s.resp.WireBytes += int64(len(f.Data()))
		if s.h == nil {
			switch {
			case len(s.resp.Body)+len(f.Data()) > maxBody:
				err = errBodyTooLarge
			case s.resp.Body == nil && s.send != nil && max(s.length, len(f.Data())) <= pooledBody:
				// Send's answer is read only while its done runs: its buffer serves the next.
				s.pooled = answerBodies.Get().(*[]byte)
				s.resp.Body = append((*s.pooled)[:0], f.Data()...)
			case s.resp.Body == nil && s.length > len(f.Data()) && s.length <= maxPresized:
				// The whole body in one allocation, not one per doubling as it comes.
				s.resp.Body = append(make([]byte, 0, s.length), f.Data()...)
			default:
				s.resp.Body = append(s.resp.Body, f.Data()...)
			}
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
		if se, ok := err.(http2.StreamError); ok {
			cn.resetStream(s, se)
		} else {
			cn.end(s, err, true)
		}
	case f.StreamEnded():
		cn.end(s, nil, false)
	}
	return nil
}

// settings applies the server's SETTINGS once every value is in its range (RFC 9113 §6.5.2): the
// writer's frame size and windows come from them.
func (cn *conn) settings(f *http2.SettingsFrame) error {
	if err := f.ForeachSetting(func(st http2.Setting) error {
		if err := st.Valid(); err != nil {
			var ce http2.ConnectionError
			errors.As(err, &ce)
			return connErrorf(http2.ErrCode(ce), "the server's setting %v is out of its range", st)
		}
		return nil
	}); err != nil {
		return err
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	err := f.ForeachSetting(func(st http2.Setting) error {
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			cn.maxStreams = int(min(st.Val, 1<<20))
		case http2.SettingInitialWindowSize:
			delta := int64(st.Val) - int64(cn.initialWindow)
			for _, s := range cn.streams {
				if int64(s.sendWindow)+delta > maxWindow {
					return connErrorf(http2.ErrCodeFlowControl, "the server's SETTINGS_INITIAL_WINDOW_SIZE of %d takes the send window of stream %d above %d",
						st.Val, s.id, maxWindow)
				}
			}
			cn.initialWindow = int32(st.Val)
			for _, s := range cn.streams {
				s.sendWindow += int32(delta)
			}
		case http2.SettingMaxFrameSize:
			cn.maxFrame = int(st.Val)
		case http2.SettingHeaderTableSize:
			cn.enqueueLocked(item{kind: itemTableSize, incr: st.Val})
		}
		return nil
	})
	if err != nil {
		return err
	}
	cn.enqueueLocked(item{kind: itemSettingsAck})
	cn.enqueueLocked(item{kind: itemKick})
	return nil
}

// windowUpdate grows a send window. Past 2^31-1 it is a flow-control error (RFC 9113 §6.9.1): of
// the stream for a stream's window, of the connection for the connection's.
func (cn *conn) windowUpdate(f *http2.WindowUpdateFrame) error {
	inc := int64(f.Increment)
	cn.mu.Lock()
	if f.StreamID == 0 {
		if int64(cn.sendWindow)+inc > maxWindow {
			cn.mu.Unlock()
			return connErrorf(http2.ErrCodeFlowControl, "the server's WINDOW_UPDATE of %d takes the connection's send window above %d", inc, maxWindow)
		}
		cn.sendWindow += int32(inc)
	} else if s := cn.streams[f.StreamID]; s != nil {
		if int64(s.sendWindow)+inc > maxWindow {
			cn.mu.Unlock()
			cn.resetStream(s, http2.StreamError{StreamID: f.StreamID, Code: http2.ErrCodeFlowControl,
				Cause: fmt.Errorf("the server's WINDOW_UPDATE of %d takes the stream's send window above %d", inc, maxWindow)})
			return nil
		}
		s.sendWindow += int32(inc)
	}
	cn.enqueueLocked(item{kind: itemKick})
	cn.mu.Unlock()
	return nil
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
