package fleet

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"sync"
)

// kube-apiserver gzips a streaming list's answer (WatchListCompression, on by default) for a
// client that accepts gzip, as client-go's transport does: the body is a series of gzip members,
// one per flush, each flush when the server has no more events at hand. compress/gzip reads from an
// io.Reader, so a decoder fed DATA frames as they come cannot hand it a member that is still
// arriving: writeGzip keeps the incomplete member's compressed bytes, inflates it again from its
// start when more arrive, and hands the events only the output they have not had yet. A member is
// usually one flush of one event, whole in one DATA frame, and is inflated once, where it lies.

// inflater is a gzip reader with its source, pooled: its window and tables are large, and a
// stream needs them only while a DATA frame is being read.
type inflater struct {
	src bytes.Reader
	zr  gzip.Reader
	out [4096]byte
}

var inflaters = sync.Pool{New: func() any { return new(inflater) }}

func (d *eventDecoder) writeGzip(p []byte) error {
	src := p
	if d.member != nil {
		*d.member = append(*d.member, p...)
		src = *d.member
	}
	for len(src) > 0 {
		n, err := d.inflate(src)
		if err != nil {
			return err
		}
		if n == 0 { // the member is incomplete: keep it for the next piece
			if d.member == nil {
				d.member = partials.Get().(*[]byte)
				*d.member = append(*d.member, src...)
			} else if len(src) < len(*d.member) {
				*d.member = append((*d.member)[:0], src...)
			}
			if len(*d.member) > maxWatchEvent {
				return errors.New("watch stream: gzip member too large")
			}
			return nil
		}
		src, d.fed = src[n:], 0
	}
	d.releaseMember()
	return nil
}

// inflate reads the gzip member at the start of src into the events, skipping the output they had
// from an earlier try. It returns the member's compressed size, or 0 if src does not hold all of it.
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
	out := 0
	for {
		n, err := z.zr.Read(z.out[:])
		if n > 0 {
			chunk := z.out[:n]
			if skip := d.fed - out; skip > 0 {
				chunk = chunk[min(skip, n):]
			}
			out += n
			if len(chunk) > 0 {
				d.fed = out
				if err := d.events(chunk); err != nil {
					return 0, err
				}
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

func (d *eventDecoder) releaseMember() {
	if d.member == nil {
		return
	}
	if cap(*d.member) <= keepPartial {
		*d.member = (*d.member)[:0]
		partials.Put(d.member)
	}
	d.member, d.fed = nil, 0
}
