package scrape

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// familyName is dto.MetricFamily's name field.
const familyName = 1

// maxFamily bounds one family's message, far above any a component exposes, so that a length
// read off a broken stream allocates no more.
const maxFamily = 64 << 20

// delimited reads a delimited protobuf exposition (each family a varint length, then a
// dto.MetricFamily) and unmarshals only the families sel keeps. kube-apiserver exposes megabytes
// of families, most of which no report reads; a family's name is read off its bytes, and the others
// are skipped undecoded. Unlike expfmt's decoder, it does not check the names and label values of
// what it skips.
func (p *parser) delimited(r io.Reader) error {
	br := bufio.NewReader(r)
	var buf []byte
	for {
		n, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read a family's length: %w", err)
		}
		if n > maxFamily {
			return fmt.Errorf("a family of %d bytes, above the %d read", n, maxFamily)
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("read a family of %d bytes: %w", n, err)
		}
		name, err := nameOf(buf)
		if err != nil {
			return err
		}
		if _, ok := p.sel[string(name)]; !ok {
			continue
		}
		var mf dto.MetricFamily
		if err := proto.Unmarshal(buf, &mf); err != nil {
			return fmt.Errorf("family %s: %w", name, err)
		}
		if err := p.family(&mf); err != nil {
			return err
		}
	}
}

// nameOf reads a serialized dto.MetricFamily's name without decoding the rest. The name comes
// first as every Prometheus client marshals it, so the scan stops there.
func nameOf(b []byte) ([]byte, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, errUndecodableFamily
		}
		b = b[n:]
		if num == familyName && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, errUndecodableFamily
			}
			return v, nil
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, errUndecodableFamily
		}
		b = b[n:]
	}
	return nil, nil
}

var errUndecodableFamily = errors.New("undecodable metric family")
