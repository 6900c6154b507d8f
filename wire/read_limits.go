package wire

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// What the reader takes from a server, so that what a connection holds is bounded by what its
// answers need and not by what a server claims (docs/reliability.md, "The wire reader's limits").
// Each is far above what kube-apiserver sends: a Node with its status and images is tens of KiB,
// etcd stores no object above 1.5 MiB, and an answer's headers are a few hundred bytes.
const (
	// maxHeaderListSize bounds the header list of an answer, as the client's SETTINGS advertise:
	// x/net's server's default (net/http's DefaultMaxHeaderBytes). It bounds an HPACK string too.
	maxHeaderListSize = 1 << 20
	// maxReadFrameSize is SETTINGS_MAX_FRAME_SIZE's initial value, which the client never raises:
	// the Framer reads no larger frame, so its one read buffer stays this small.
	maxReadFrameSize = 16 << 10
	// maxBody bounds a unary answer's body, and what a gzipped one inflates to: client-go's
	// streaming decoder takes no larger object either.
	maxBody = 16 << 20
	// maxPresized bounds the buffer made for a unary answer at the length its Content-Length
	// claims before the body has come: the heartbeats' answers, well under it, are read in one
	// allocation, and a larger claim is not taken at its word.
	maxPresized = 64 << 10
	// max1xx bounds the informational answers before a request's own, as net/http's client does.
	max1xx = 5
	// maxWindow is the largest flow-control window (RFC 9113 §6.9.1).
	maxWindow = 1<<31 - 1
)

// readerState is what only the reader goroutine touches.
type readerState struct {
	dec         *hpack.Decoder
	cur         *stream // whose header block dec is decoding
	curEnds     bool    // the block's HEADERS frame ended its stream
	inBlock     bool    // a header block has begun and not ended: its frames are no sign of life
	blockID     uint32  // the block's stream
	blockLeft   int     // bytes the block may still take
	listLeft    uint32  // what its header list may still decode to
	listOver    bool    // it decoded past maxHeaderListSize
	recvUnacked uint32  // connection-level bytes consumed and not yet returned
}

// readSettings are the client's SETTINGS that bound what the server may send it.
func readSettings() []http2.Setting {
	return []http2.Setting{{ID: http2.SettingMaxHeaderListSize, Val: maxHeaderListSize}}
}

// limitReads sets the reader's bounds on a new connection's Framer and HPACK decoder.
func (cn *conn) limitReads() {
	cn.fr.SetMaxReadFrameSize(maxReadFrameSize)
	// Reused DATA frames: the frame is valid only until the next read, and the reader is done
	// with it by then. The Framer keeps one read buffer, of at most maxReadFrameSize.
	cn.fr.SetReuseFrames()
	cn.dec = hpack.NewDecoder(4096, cn.emit)
	cn.dec.SetMaxStringLength(maxHeaderListSize)
}

// connError is a connection error (RFC 9113 §5.4.1) of the server's making: the connection fails,
// and every stream on it with this error. It is an http2.ConnectionError of its code to errors.As.
type connError struct {
	code http2.ErrCode
	msg  string
}

func (e connError) Error() string {
	return fmt.Sprintf("http2: %s: connection error: %v", e.msg, e.code)
}

func (e connError) Unwrap() error { return http2.ConnectionError(e.code) }

func connErrorf(code http2.ErrCode, format string, args ...any) connError {
	return connError{code: code, msg: fmt.Sprintf(format, args...)}
}

// readError names what the Framer refused in the server's frame fh: the Framer's own errors are a
// code, or a bare "frame too large".
func (cn *conn) readError(fh http2.FrameHeader, err error) error {
	if errors.Is(err, http2.ErrFrameTooLarge) {
		return connErrorf(http2.ErrCodeFrameSize, "the server sent a %v frame of %d bytes, above the %d of SETTINGS_MAX_FRAME_SIZE",
			fh.Type, fh.Length, maxReadFrameSize)
	}
	var ce http2.ConnectionError
	if !errors.As(err, &ce) {
		return err
	}
	what := "malformed"
	if d := cn.fr.ErrorDetail(); d != nil {
		what = d.Error()
	} else if fh.Type == http2.FrameSettings && http2.ErrCode(ce) == http2.ErrCodeFlowControl {
		what = fmt.Sprintf("SETTINGS_INITIAL_WINDOW_SIZE above %d", maxWindow)
	}
	return connErrorf(http2.ErrCode(ce), "the server's %v frame on stream %d: %s", fh.Type, fh.StreamID, what)
}

// resetStream ends s on a stream error of the server's (RFC 9113 §5.4.2), with a RST_STREAM of
// the error's code.
func (cn *conn) resetStream(s *stream, se http2.StreamError) {
	if cn.end(s, se, false) {
		cn.enqueue(item{kind: itemReset, id: se.StreamID, code: se.Code})
	}
}

// errBodyTooLarge ends a unary answer whose body, or what it inflates to, passes maxBody.
var errBodyTooLarge = fmt.Errorf("wire: answer's body above the %d bytes a request reads", maxBody)

// gunzip inflates a gzipped answer, to at most maxBody bytes.
func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxBody {
		return nil, errBodyTooLarge
	}
	return out, nil
}
