package wire

import (
	"errors"
	"sync"

	"golang.org/x/net/http2"
	"k8s.io/utils/clock"
)

// Handlers receive a stream's answer on the connection's reader goroutine, in order: OnResponse
// once its headers are in (Body empty), OnData for each piece of its body, then OnEnd once, with nil
// at the end of the body or the error that ended it (the context's, a reset, a lost connection, one
// of the handlers' own). OnData's bytes are the reader's buffer: valid only during the call. A
// handler must not block: the connection's other streams wait for it. The
// server may send more only as the handlers return (flow control), so a slow handler slows its
// stream, not memory.
type Handlers struct {
	OnResponse func(*Response) error // nil: accept any answer
	OnData     func([]byte) error
	OnEnd      func(error)
}

// stream is one request and its answer: state, never a goroutine.
type stream struct {
	cn  *conn
	req *Request

	// Under cn.mu.
	id         uint32 // 0 until the writer sends the HEADERS
	ended      bool   // removed from the connection; done closed or OnEnd called (or about to be)
	sendWindow int32
	body       []byte // still to send

	// The reader's alone while the stream is open; the caller's once done is closed.
	resp        Response
	headersDone bool
	length      int    // the answer's Content-Length; 0 if it has none
	unacked     uint32 // bytes consumed and not yet returned to the server's window
	informed    uint8  // informational (1xx) answers so far
	err         error

	done chan struct{} // unary requests: closed when the answer is complete or failed

	send   *sendStream // unary requests of Send: its sent is called when the answer is complete or failed
	timer  clock.Timer // Send's timeout; nil: none
	pooled *[]byte     // the answerBodies buffer resp.Body was read into, if one was

	h       *Handlers // streams
	cbMu    sync.Mutex
	cbEnded bool // under cbMu: OnEnd called, no more handler calls
	stopCtx func() bool
}

// retryable marks a failure of a request the server never took: net/http sends those again on
// another connection (GOAWAY above the last stream ID, REFUSED_STREAM, a connection that failed
// before the request was written), and so does Client.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

func isRetryable(err error) bool {
	var r retryable
	return errors.As(err, &r)
}

// errGotGoAway is net/http's error for a request above a GOAWAY's last stream ID.
var errGotGoAway = errors.New("http2: Transport received Server's graceful shutdown GOAWAY")

// errFromPeer is the cause net/http gives a stream reset by the server.
var errFromPeer = errors.New("received from peer")

func streamReset(id uint32, code http2.ErrCode) error {
	err := http2.StreamError{StreamID: id, Code: code, Cause: errFromPeer}
	if code == http2.ErrCodeRefusedStream {
		return retryable{err}
	}
	return err
}
