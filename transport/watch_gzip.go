package transport

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"sync"
)

// kube-apiserver gzips a streaming list's answer (WatchListCompression, on by default) for a
// client that accepts gzip, as client-go's transport does: the body is a series of gzip members,
// one per flush, each flush when the server has no more events at hand. A member is usually one
// flush of one event, whole in one DATA frame, and is inflated where it lies with a pooled
// inflater. A member cut across DATA frames (a large flush: the list's first events) is inflated
// as its pieces arrive, by a memberInflater.
//
// compress/gzip pulls its input from an io.Reader and cannot be handed more once it has seen the
// end of what it had, so a memberInflater runs on a goroutine of its own while its member lasts:
// its reader waits for the next piece, and the stream's goroutine, which hands it each piece, waits
// until it has taken all of it, so that the events are still handled one at a time, in order,
// before the piece's Write returns. Inflating the member again from its start at each piece would
// cost the square of its pieces; this costs, while a member is cut, one goroutine and one
// inflater's window and tables.

// inflater is a gzip reader with its source, pooled: its window and tables are large, and a
// stream needs them only while a DATA frame is being read, or a cut member lasts.
type inflater struct {
	src bytes.Reader
	zr  gzip.Reader
	out [4096]byte
}

var inflaters = sync.Pool{New: func() any { return new(inflater) }}

func (d *eventDecoder) writeGzip(p []byte) error {
	if d.member != nil {
		rest, err := d.member.give(d, p)
		if err != nil || d.member != nil {
			return err
		}
		p = rest
	}
	for len(p) > 0 {
		n, err := d.inflate(p)
		if err != nil {
			return err
		}
		if n == 0 { // the member goes on in the next pieces
			rest, err := d.startMember(p)
			if err != nil || d.member != nil {
				return err
			}
			p = rest
			continue
		}
		p, d.fed = p[n:], 0
	}
	return nil
}

// inflate reads the gzip member at the start of src into the events. It returns the member's
// compressed size, or 0 if src does not hold all of it; d.fed is then the output the events had.
func (d *eventDecoder) inflate(src []byte) (int, error) {
	z := inflaters.Get().(*inflater)
	defer inflaters.Put(z)
	z.src.Reset(src)
	if err := z.zr.Reset(&z.src); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil
		}
		return 0, err
	}
	z.zr.Multistream(false)
	for {
		n, err := z.zr.Read(z.out[:])
		if n > 0 {
			d.fed += n
			if err := d.events(z.out[:n]); err != nil {
				return 0, err
			}
		}
		switch {
		case err == io.EOF:
			return len(src) - z.src.Len(), nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			return 0, nil
		case err != nil:
			return 0, err
		}
	}
}

// memberInflater inflates one gzip member as its pieces arrive (see above). Its fields are its
// goroutine's while the stream's goroutine waits in give, and the stream's otherwise.
type memberInflater struct {
	piece []byte       // what is left of the piece being read
	in    chan []byte  // the next piece; closed when the body ends before the member does
	out   chan stepped // after each piece: the member needs more, ended, or failed
	quiet bool         // the body ended: the events are owed nothing more
}

// stepped is what became of a piece: done (the member ended, rest is what follows it in the piece)
// or err; neither: the member needs the next piece.
type stepped struct {
	done bool
	rest []byte
	err  error
}

// startMember inflates the member at the start of p, which p holds only the beginning of, skipping
// the output the events had from the in-place try, and returns what follows it in p if it ended.
func (d *eventDecoder) startMember(p []byte) ([]byte, error) {
	m := &memberInflater{piece: p, in: make(chan []byte), out: make(chan stepped)}
	d.member = m
	go m.run(d, d.fed)
	return m.wait(d)
}

// give hands the member the next piece, and returns what follows the member in it if it ended.
func (m *memberInflater) give(d *eventDecoder, p []byte) ([]byte, error) {
	m.in <- p
	return m.wait(d)
}

func (m *memberInflater) wait(d *eventDecoder) ([]byte, error) {
	s := <-m.out
	if s.done || s.err != nil { // its goroutine has returned
		d.member, d.fed = nil, 0
	}
	return s.rest, s.err
}

// endMember ends a member cut off by the end of the body, and waits for its goroutine to return.
func (d *eventDecoder) endMember() {
	m := d.member
	if m == nil {
		return
	}
	m.quiet = true
	close(m.in)
	<-m.out
	d.member, d.fed = nil, 0
}

// run inflates the member on its own goroutine, handing the events the output past skip.
func (m *memberInflater) run(d *eventDecoder, skip int) {
	z := inflaters.Get().(*inflater)
	defer inflaters.Put(z)
	s := m.inflate(d, z, skip)
	m.piece = nil
	m.out <- s
}

func (m *memberInflater) inflate(d *eventDecoder, z *inflater, skip int) stepped {
	if err := z.zr.Reset(m); err != nil {
		return stepped{err: err}
	}
	z.zr.Multistream(false)
	for {
		n, err := z.zr.Read(z.out[:])
		chunk := z.out[:n]
		if skip > 0 {
			k := min(skip, n)
			chunk, skip = chunk[k:], skip-k
		}
		if len(chunk) > 0 && !m.quiet {
			if err := d.events(chunk); err != nil {
				return stepped{err: err}
			}
		}
		switch {
		case err == io.EOF:
			return stepped{done: true, rest: m.piece}
		case err != nil:
			return stepped{err: err}
		}
	}
}

// more waits for the next piece: false once the body has ended.
func (m *memberInflater) more() bool {
	m.out <- stepped{}
	p, ok := <-m.in
	m.piece = p
	return ok
}

// Read and ReadByte are the member's compressed bytes as they arrive. As an io.ByteReader the
// inflater is handed to gzip as it is, without a bufio.Reader that would read past the member's end.
func (m *memberInflater) Read(p []byte) (int, error) {
	for len(m.piece) == 0 {
		if !m.more() {
			return 0, io.ErrUnexpectedEOF
		}
	}
	n := copy(p, m.piece)
	m.piece = m.piece[n:]
	return n, nil
}

func (m *memberInflater) ReadByte() (byte, error) {
	for len(m.piece) == 0 {
		if !m.more() {
			return 0, io.ErrUnexpectedEOF
		}
	}
	b := m.piece[0]
	m.piece = m.piece[1:]
	return b, nil
}
