package wire

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"fakelet.dev/fakelet/internal/h2script"
)

// A fuzz script is a series of frames for the server to write, each
//
//	type, flags, stream, length (2 bytes, big-endian), payload
//
// where type's high bit writes the payload as raw bytes instead of a frame (a frame header whose
// length is not what follows, a frame cut short), and stream picks 0, 1 (the watch), 3 (the
// request) or 5 (never opened) by its low two bits, or with its high bit a stream ID far above.
const fuzzRaw = 0x80

// fuzzFrame appends one frame of a fuzz script.
func fuzzFrame(b []byte, typ http2.FrameType, flags http2.Flags, stream byte, payload []byte) []byte {
	b = append(b, byte(typ), byte(flags), stream)
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	return append(b, payload...)
}

func fuzzRawBytes(b []byte, raw []byte) []byte {
	b = append(b, fuzzRaw, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(raw)))
	return append(b, raw...)
}

func fuzzStream(sel byte) uint32 {
	if sel&0x80 != 0 {
		return uint32(sel)<<20 | 7
	}
	return [4]uint32{0, 1, 3, 5}[sel&3]
}

// playFuzzScript writes the script's frames.
func playFuzzScript(rc *h2script.Conn, script []byte) {
	fr := rc.Framer()
	for len(script) >= 5 {
		typ, flags, sel := script[0], script[1], script[2]
		n := min(int(binary.BigEndian.Uint16(script[3:5])), len(script)-5)
		payload := script[5 : 5+n]
		script = script[5+n:]
		if typ&fuzzRaw != 0 {
			rc.WriteRaw(payload)
			continue
		}
		if fr.WriteRawFrame(http2.FrameType(typ&0x0f), http2.Flags(flags), fuzzStream(sel), payload) != nil {
			return
		}
	}
}

// u32s is the SETTINGS or WINDOW_UPDATE payload of its values.
func u32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func setting(id http2.SettingID, v uint32) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(id)), u32s(v)...)
}

// fuzzSeeds are scripts that reach each of the reader's limits and each kind of frame.
func fuzzSeeds() [][]byte {
	hdr := func(fields ...hpack.HeaderField) []byte {
		var buf bytes.Buffer
		enc := hpack.NewEncoder(&buf)
		for _, f := range fields {
			_ = enc.WriteField(f)
		}
		return buf.Bytes()
	}
	status := func(s string) []byte { return hdr(hpack.HeaderField{Name: ":status", Value: s}) }
	endHeaders := http2.FlagHeadersEndHeaders
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	bigString := appendLiteral(status("200"), "x-big", 100<<20)
	var s [][]byte
	add := func(b []byte) { s = append(s, b) }
	add(nil) // only the answers that follow every script
	add(fuzzFrame(nil, http2.FrameSettings, 0, 0, setting(http2.SettingMaxFrameSize, 0)))
	// The watch, refused, is sent again on the same connection, under the new MAX_FRAME_SIZE.
	add(fuzzFrame(fuzzFrame(nil, http2.FrameSettings, 0, 0, setting(http2.SettingMaxFrameSize, 0)), http2.FrameRSTStream, 0, 1, u32s(uint32(http2.ErrCodeRefusedStream))))
	add(fuzzFrame(nil, http2.FrameSettings, 0, 0, append(setting(http2.SettingInitialWindowSize, 0), setting(http2.SettingMaxConcurrentStreams, 0)...)))
	add(fuzzFrame(fuzzFrame(nil, http2.FrameWindowUpdate, 0, 2, u32s(1<<31-1-65535)), http2.FrameSettings, 0, 0, setting(http2.SettingInitialWindowSize, 65536)))
	add(fuzzFrame(nil, http2.FrameWindowUpdate, 0, 0, u32s(1<<31-1)))
	add(fuzzFrame(nil, http2.FrameWindowUpdate, 0, 1, u32s(0)))
	b := fuzzFrame(nil, http2.FrameHeaders, 0, 1, status("200"))
	for range 3 {
		b = fuzzFrame(b, http2.FrameContinuation, 0, 1, nil)
	}
	add(fuzzFrame(b, http2.FrameContinuation, http2.Flags(endHeaders), 1, nil))
	add(fuzzFrame(fuzzFrame(nil, http2.FrameHeaders, 0, 3, bigString), http2.FrameContinuation, 0, 3, make([]byte, 16<<10)))
	add(fuzzFrame(nil, http2.FrameData, 0, 1, []byte("before the headers")))
	add(fuzzFrame(fuzzFrame(nil, http2.FrameHeaders, http2.Flags(endHeaders), 3, status("200")), http2.FrameData, 0, 3, make([]byte, 20<<10)))
	add(fuzzRawBytes(nil, append([]byte{0xff, 0xff, 0xff, byte(http2.FrameData), 0, 0, 0, 0, 3}, "ten bytes."...)))
	add(fuzzFrame(nil, http2.FrameGoAway, 0, 0, append(u32s(0, uint32(http2.ErrCodeNo)), "bye"...)))
	add(fuzzFrame(fuzzFrame(nil, http2.FrameRSTStream, 0, 1, u32s(uint32(http2.ErrCodeRefusedStream))), http2.FrameRSTStream, 0, 2, u32s(uint32(http2.ErrCodeCancel))))
	add(fuzzFrame(fuzzFrame(nil, http2.FramePing, 0, 0, make([]byte, 8)), http2.FramePing, http2.Flags(http2.FlagPingAck), 0, make([]byte, 8)))
	add(fuzzFrame(nil, http2.FramePushPromise, http2.Flags(endHeaders), 1, append(u32s(2), status("200")...)))
	b = nil
	for range 7 {
		b = fuzzFrame(b, http2.FrameHeaders, http2.Flags(endHeaders), 1, status("100"))
	}
	add(b)
	gz := fuzzFrame(nil, http2.FrameHeaders, http2.Flags(endHeaders), 3, hdr(hpack.HeaderField{Name: ":status", Value: "200"}, hpack.HeaderField{Name: "content-encoding", Value: "gzip"}))
	add(fuzzFrame(gz, http2.FrameData, http2.Flags(http2.FlagDataEndStream), 3, zipped.Bytes()))
	add(fuzzFrame(nil, http2.FrameHeaders, http2.Flags(endHeaders|http2.FlagHeadersPadded), 1, []byte{200, 0x88}))
	add(fuzzFrame(nil, http2.FrameSettings, 0, 0, setting(http2.SettingHeaderTableSize, 0)))
	add(fuzzFrame(nil, http2.FrameHeaders, http2.Flags(endHeaders), 1, []byte{0x3f, 0xe1, 0x1f})) // a table size update above the 4096 allowed
	return s
}

// fuzzBudget is what a case may allocate for a script of n bytes: the connections' own (TLS,
// buffers, the request's body), and twice what its bytes could inflate to as gzip (1032 to 1, with
// io.ReadAll's growth), up to maxBody. A buffer made at a length the server only claims, a Framer's
// 16 MiB or an HPACK string's, is caught by a short script.
func fuzzBudget(n int) uint64 { return 4<<20 + uint64(min(2*1032*n, 2*maxBody)) }

// fuzzCase is the script of the case being run: the first connection of its client plays it.
type fuzzCase struct {
	script []byte
	played atomic.Bool
}

// FuzzReader has a scripted server write arbitrary frame sequences to a connection with a watch
// and a request open on it, then answer both properly and read until the client closes: whatever
// the frames, no goroutine panics, both end (answered, failed or retried on another connection)
// within a bound instead of hanging, every goroutine of the case ends, and the case allocates no
// more than its script's size times a constant beyond a fixed budget (one gunzipped answer at
// maxBody among it). Its regular run plays the seeds, in well under a second.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	var cur atomic.Pointer[fuzzCase]
	srv := h2script.New(f, nil, func(rc *h2script.Conn) {
		fc := cur.Load()
		if fc == nil || !fc.played.CompareAndSwap(false, true) {
			for { // a connection the client dialled again
				r, ok := rc.Request()
				if !ok {
					return
				}
				rc.Respond(r.StreamID, 200, "text/plain", []byte("again"))
			}
		}
		var opened []uint32
		for len(opened) < 2 {
			fr, err := rc.ReadFrame()
			if err != nil {
				return
			}
			if h, ok := fr.(*http2.HeadersFrame); ok {
				opened = append(opened, h.StreamID)
			}
		}
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for {
				if _, err := rc.ReadFrame(); err != nil {
					return
				}
			}
		}()
		playFuzzScript(rc, fc.script)
		fr := rc.Framer()
		for _, id := range opened {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0x88}, EndHeaders: true}) // :status 200, static
			_ = fr.WriteData(id, true, []byte("ok"))
		}
		<-drained
	})
	tlsConfig := &tls.Config{RootCAs: srv.Roots(), ClientSessionCache: tls.NewLRUClientSessionCache(8)}
	body := make([]byte, 70000) // more than the initial windows: the writer waits for WINDOW_UPDATEs
	f.Fuzz(func(t *testing.T, script []byte) {
		goroutines := runtime.NumGoroutine()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		cur.Store(&fuzzCase{script: script})
		c, err := New(Config{Host: srv.URL(), TLS: tlsConfig, ReadIdleTimeout: 250 * time.Millisecond, PingTimeout: 250 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		watched := make(chan error, 1)
		c.Stream(ctx, &Request{Path: "/api/v1/pods?watch=1"}, Handlers{OnData: func([]byte) error { return nil }, OnEnd: func(err error) { watched <- err }})
		answered := make(chan error, 1)
		go func() {
			_, err := c.Do(ctx, &Request{Method: "PUT", Path: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", Body: body})
			answered <- err
		}()
		bound := time.NewTimer(10 * time.Second)
		defer bound.Stop()
		for _, end := range []struct {
			what string
			ch   chan error
		}{{"watch", watched}, {"request", answered}} {
			select {
			case <-end.ch:
			case <-bound.C:
				cancel()
				c.Close()
				t.Fatalf("the %s had not ended 10 s after the script's frames and its answer", end.what)
			}
		}
		cancel()
		c.Close()
		for runtime.NumGoroutine() > goroutines {
			select {
			case <-bound.C:
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines outlived the case, %d before it:\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
			default:
				time.Sleep(time.Millisecond) // goroutines end with no event to wait for
			}
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if n, budget := after.TotalAlloc-before.TotalAlloc, fuzzBudget(len(script)); n > budget {
			t.Fatalf("the case allocated %d bytes for a script of %d, above its budget of %d", n, len(script), budget)
		}
	})
}
