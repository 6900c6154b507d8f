package h2script

import (
	"bytes"
	"net"
	"strconv"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Conn is the server's side of one connection; only its script's goroutine uses it. Its writes
// ignore errors: a script goes on to its next read, which ends when the connection has.
type Conn struct {
	t    testing.TB
	nc   net.Conn
	fr   *http2.Framer
	dec  *hpack.Decoder
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	open map[uint32]*Event // requests whose body is still coming
}

func newConn(t testing.TB, nc net.Conn) *Conn {
	c := &Conn{t: t, nc: nc, fr: http2.NewFramer(nc, nc), dec: hpack.NewDecoder(4096, nil), open: map[uint32]*Event{}}
	c.enc = hpack.NewEncoder(&c.hbuf)
	return c
}

// Event is what the client sent that a script waits for: a whole request, or the reset of a stream.
type Event struct {
	StreamID uint32
	Header   map[string][]string // as decoded, pseudo-headers (":method", ":path") included
	Body     []byte
	Reset    bool
	ErrCode  http2.ErrCode // the reset's
}

// Get is the first value of the header name ("" without one).
func (e Event) Get(name string) string {
	if v := e.Header[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Next reads frames until a request is whole (its headers and any body) or a stream is reset,
// acknowledging SETTINGS and giving back the flow-control window of each DATA frame; false when the
// connection ends.
func (c *Conn) Next() (Event, bool) {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return Event{}, false
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			fields, err := c.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				c.t.Errorf("decode the headers of stream %d: %v", f.StreamID, err)
				return Event{}, false
			}
			e := &Event{StreamID: f.StreamID, Header: map[string][]string{}}
			for _, hf := range fields {
				e.Header[hf.Name] = append(e.Header[hf.Name], hf.Value)
			}
			if f.StreamEnded() {
				return *e, true
			}
			c.open[f.StreamID] = e
		case *http2.DataFrame:
			e := c.open[f.StreamID]
			if e == nil {
				c.t.Errorf("DATA on stream %d, which has no open request", f.StreamID)
				return Event{}, false
			}
			e.Body = append(e.Body, f.Data()...)
			if n := uint32(len(f.Data())); n > 0 {
				_ = c.fr.WriteWindowUpdate(0, n)
				_ = c.fr.WriteWindowUpdate(f.StreamID, n)
			}
			if f.StreamEnded() {
				delete(c.open, f.StreamID)
				return *e, true
			}
		case *http2.RSTStreamFrame:
			delete(c.open, f.StreamID)
			return Event{StreamID: f.StreamID, Reset: true, ErrCode: f.ErrCode}, true
		}
	}
}

// Request is Next passing over the resets of streams.
func (c *Conn) Request() (Event, bool) {
	for {
		e, ok := c.Next()
		if !ok || !e.Reset {
			return e, ok
		}
	}
}

// ReadFrame reads the next frame as it is, for a script that waits for a frame Next does not return
// (a PING's acknowledgement); it answers nothing.
func (c *Conn) ReadFrame() (http2.Frame, error) { return c.fr.ReadFrame() }

// Headers answers stream id with status and a content type; end ends the stream.
func (c *Conn) Headers(id uint32, status int, contentType string, end bool) {
	c.hbuf.Reset()
	_ = c.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	_ = c.enc.WriteField(hpack.HeaderField{Name: "content-type", Value: contentType})
	_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true, EndStream: end})
}

// Data writes one DATA frame of b on stream id; end ends the stream.
func (c *Conn) Data(id uint32, end bool, b []byte) { _ = c.fr.WriteData(id, end, b) }

// Respond answers stream id whole: headers, and body in one DATA frame if there is one.
func (c *Conn) Respond(id uint32, status int, contentType string, body []byte) {
	c.Headers(id, status, contentType, len(body) == 0)
	if len(body) > 0 {
		c.Data(id, true, body)
	}
}

// Reset resets stream id with code.
func (c *Conn) Reset(id uint32, code http2.ErrCode) { _ = c.fr.WriteRSTStream(id, code) }

// GoAway says the server takes no stream after lastID.
func (c *Conn) GoAway(lastID uint32, code http2.ErrCode, debug []byte) {
	_ = c.fr.WriteGoAway(lastID, code, debug)
}

// WindowUpdate gives the client incr more of stream id's send window (id 0: the connection's).
func (c *Conn) WindowUpdate(id, incr uint32) { _ = c.fr.WriteWindowUpdate(id, incr) }

// Ping sends a PING (not an acknowledgement) with data.
func (c *Conn) Ping(data [8]byte) { _ = c.fr.WritePing(false, data) }

// Close drops the connection, as a server that dies does.
func (c *Conn) Close() { c.nc.Close() }

// Framer is the connection's framer, for a script that writes frames the methods above do not (a
// header block cut into CONTINUATION frames, WINDOW_UPDATE, SETTINGS mid-connection, frames that
// break the protocol).
func (c *Conn) Framer() *http2.Framer { return c.fr }

// HeaderBlock encodes fields with the connection's HPACK encoder, for Framer's HEADERS.
func (c *Conn) HeaderBlock(fields ...hpack.HeaderField) []byte {
	c.hbuf.Reset()
	for _, f := range fields {
		_ = c.enc.WriteField(f)
	}
	return bytes.Clone(c.hbuf.Bytes())
}

// WriteRaw writes b to the connection as it is, for a script that breaks the framing itself (a
// frame header whose length is not what follows it).
func (c *Conn) WriteRaw(b []byte) { _, _ = c.nc.Write(b) }
