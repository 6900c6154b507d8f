package wire

import (
	"errors"
	"strconv"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

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
