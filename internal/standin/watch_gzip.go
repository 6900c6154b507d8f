package standin

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
)

// kube-apiserver v1.37 gzips a streaming list's answer for a client that accepts gzip
// (WatchListCompression, on by default), at level 1, for the watch's whole life: one gzip member
// per flush. Its clients inflate every event of their Reflectors' watches, and so must the fleet's
// against the stand-in for its cost to be theirs. A plain watch is not gzipped, as there.

var (
	gzipEncoding = []string{"gzip"}
	varyEncoding = []string{"Accept-Encoding"}
)

var gzipWriters = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	if err != nil {
		panic(err) // BestSpeed is a valid level
	}
	return zw
}}

// memberWriter writes what it is given as gzip members, one per endMember.
type memberWriter struct {
	w  io.Writer
	zw *gzip.Writer // nil between members: an idle watch holds no deflate state
}

func (m *memberWriter) Write(p []byte) (int, error) {
	if m.zw == nil {
		m.zw = gzipWriters.Get().(*gzip.Writer)
		m.zw.Reset(m.w)
	}
	return m.zw.Write(p)
}

// endMember writes out the member begun since the last, if any. Its data ends in a sync flush before
// the member's end, as the apiserver's does: a multistream gzip reader (Go's transport's) returns
// the data that comes with a member's end only once it has read the next member's header, which a
// quiet watch would hold back for as long as it stays quiet.
func (m *memberWriter) endMember() error {
	if m.zw == nil {
		return nil
	}
	err := m.zw.Flush()
	if err == nil {
		err = m.zw.Close()
	}
	m.release()
	return err
}

// release gives the deflate state back without writing the member's end (its stream is over).
func (m *memberWriter) release() {
	if m.zw != nil {
		m.zw.Reset(io.Discard)
		gzipWriters.Put(m.zw)
		m.zw = nil
	}
}

// acceptsGzip says whether a request's Accept-Encoding names gzip as the apiserver reads it: its
// first value, a token exactly "gzip" (one with parameters, "gzip;q=1", is not).
func acceptsGzip(h http.Header) bool {
	for tok := range strings.SplitSeq(h.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(tok) == "gzip" {
			return true
		}
	}
	return false
}
