package transport

import (
	"encoding/binary"
	"runtime"
	"testing"
)

// FuzzEventDecoder feeds the watch decoder arbitrary bodies, cut in pieces of every size, as
// protobuf, JSON and gzipped protobuf: no panic, no buffer or inflater left once the body ends, and
// no more allocated than a constant times the body (times what it could inflate to, gzipped) beyond
// a fixed budget: a length the server only claims costs nothing. Its seeds run in every go test.
func FuzzEventDecoder(f *testing.F) {
	events := watchEvents(f)
	proto := protobufStream(f, events)
	for _, seed := range []struct {
		body   []byte
		format byte
	}{
		{proto, 0},
		{jsonStream(f), 1},
		{gzipMembers(f, protobufStream(f, events[:2]), protobufStream(f, events[2:])), 2},
		{append(binary.BigEndian.AppendUint32(nil, 15<<20), "ten bytes."...), 0},
		{append(binary.BigEndian.AppendUint32(nil, maxWatchEvent+1), proto...), 0},
		{[]byte(`{"type":"ADDED","object":{"metadata":{"name":"\"}{["}}}{`), 1},
		{gzipMembers(f, make([]byte, 1<<20)), 2},
	} {
		for _, cut := range []uint16{0, 6, 4095} {
			f.Add(seed.body, seed.format, cut)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, format byte, cut uint16) {
		d := &eventDecoder{h: discard{}, json: format%3 == 1, gzip: format%3 == 2}
		size := int(cut)%4096 + 1
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for b := body; len(b) > 0; {
			n := min(size, len(b))
			if d.Write(b[:n]) != nil {
				break
			}
			b = b[n:]
		}
		d.End()
		runtime.ReadMemStats(&after)
		if d.partial != nil || d.member != nil {
			t.Fatal("the decoder kept a buffer or an inflater after the body ended")
		}
		budget := uint64(1<<20 + 8*len(body))
		if d.gzip {
			budget += uint64(min(2*1032*len(body), 3*maxWatchEvent))
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > budget {
			t.Fatalf("a body of %d bytes (format %d, pieces of %d) allocated %d bytes, above its budget of %d", len(body), format%3, size, n, budget)
		}
	})
}
