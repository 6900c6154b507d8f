package wire

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"fakelet.dev/fakelet/internal/h2script"
)

// failFast bounds a request the reader must fail at once: a reader that does not fail it lets it
// wait for this instead.
const failFast = 5 * time.Second

// wantConnError checks that err is the connection error code, with its message naming want.
func wantConnError(t *testing.T, err error, code http2.ErrCode, want string) {
	t.Helper()
	var ce http2.ConnectionError
	if !errors.As(err, &ce) || http2.ErrCode(ce) != code || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want a connection error %v naming %q", err, code, want)
	}
	t.Log(err)
}

// hold is a script that reads the requests and answers none.
func hold(rc *h2script.Conn) {
	for {
		if _, ok := rc.Next(); !ok {
			return
		}
	}
}

// TestInvalidServerSettingsFailTheConnection: a SETTINGS value outside its range (RFC 9113 §6.5.2)
// fails the connection with the error the RFC names, and the error says which setting it was. A
// MAX_FRAME_SIZE of 0 made the writer loop on empty CONTINUATION frames, one of 2^31 made its
// frame size negative, an INITIAL_WINDOW_SIZE of 2^31 wrapped every stream's window.
func TestInvalidServerSettingsFailTheConnection(t *testing.T) {
	for _, tc := range []struct {
		setting http2.Setting
		code    http2.ErrCode
	}{
		{http2.Setting{ID: http2.SettingMaxFrameSize, Val: 0}, http2.ErrCodeProtocol},
		{http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 31}, http2.ErrCodeProtocol},
		{http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31}, http2.ErrCodeFlowControl},
		{http2.Setting{ID: http2.SettingEnablePush, Val: 2}, http2.ErrCodeProtocol},
	} {
		t.Run(tc.setting.String(), func(t *testing.T) {
			srv := h2script.New(t, []http2.Setting{tc.setting}, hold)
			c := scriptedClient(t, srv, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), failFast)
			defer cancel()
			_, err := c.Do(ctx, &Request{Method: "PUT", Path: "/x", Body: []byte("b")})
			wantConnError(t, err, tc.code, tc.setting.ID.String())
		})
	}
}

// TestWindowOverflowIsAFlowControlError: a WINDOW_UPDATE or an INITIAL_WINDOW_SIZE that takes a
// send window past 2^31-1 is a FLOW_CONTROL_ERROR (RFC 9113 §6.9.1, §6.9.2): of the connection for
// the connection's window and for a SETTINGS change, of the stream for a stream's window.
func TestWindowOverflowIsAFlowControlError(t *testing.T) {
	const max = 1<<31 - 1
	for _, tc := range []struct {
		name   string
		script func(rc *h2script.Conn, id uint32)
		stream bool // the stream fails, not the connection
	}{
		{"connection WINDOW_UPDATE", func(rc *h2script.Conn, id uint32) { _ = rc.Framer().WriteWindowUpdate(0, max) }, false},
		{"stream WINDOW_UPDATE", func(rc *h2script.Conn, id uint32) { _ = rc.Framer().WriteWindowUpdate(id, max) }, true},
		{"INITIAL_WINDOW_SIZE after WINDOW_UPDATE", func(rc *h2script.Conn, id uint32) {
			_ = rc.Framer().WriteWindowUpdate(id, max-65535)
			_ = rc.Framer().WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65536})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := h2script.New(t, nil, func(rc *h2script.Conn) {
				r, ok := rc.Request()
				if !ok {
					return
				}
				tc.script(rc, r.StreamID)
				rc.Respond(r.StreamID, 200, "text/plain", []byte("ok"))
				hold(rc)
			})
			c := scriptedClient(t, srv, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), failFast)
			defer cancel()
			_, err := c.Do(ctx, &Request{Path: "/x"})
			if tc.stream {
				var se http2.StreamError
				if !errors.As(err, &se) || se.Code != http2.ErrCodeFlowControl || !strings.Contains(err.Error(), "window") {
					t.Fatalf("got %v, want the stream's FLOW_CONTROL_ERROR", err)
				}
				return
			}
			wantConnError(t, err, http2.ErrCodeFlowControl, "window")
		})
	}
}

// TestClientAdvertisesItsHeaderListLimit: the client's SETTINGS carry the header list size it
// takes, so that a server knows what it may send.
func TestClientAdvertisesItsHeaderListLimit(t *testing.T) {
	got := make(chan uint32, 1)
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		f, err := rc.ReadFrame()
		if err != nil {
			got <- 0
			return
		}
		sf, ok := f.(*http2.SettingsFrame)
		v, has := uint32(0), false
		if ok {
			v, has = sf.Value(http2.SettingMaxHeaderListSize)
		}
		if !has {
			v = 0
		}
		got <- v
		_ = rc.Framer().WriteSettingsAck()
		answerAll(rc)
	})
	c := scriptedClient(t, srv, Config{})
	if _, err := c.Do(context.Background(), &Request{Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != maxHeaderListSizeForTest {
		t.Errorf("SETTINGS_MAX_HEADER_LIST_SIZE %d, want %d", v, maxHeaderListSizeForTest)
	}
}

// maxHeaderListSizeForTest is x/net's server's default, which the client takes too.
const maxHeaderListSizeForTest = 1 << 20

// appendLiteral appends an HPACK literal field without indexing whose value claims n bytes, and
// none of them (RFC 7541 §6.2.2, §5.1).
func appendLiteral(b []byte, name string, n uint64) []byte {
	b = append(b, 0x00, byte(len(name)))
	b = append(b, name...)
	if n < 127 {
		return append(b, byte(n))
	}
	b = append(b, 127)
	n -= 127
	for n >= 128 {
		b = append(b, byte(n&0x7f|0x80))
		n >>= 7
	}
	return append(b, byte(n))
}

// TestHeaderBlocksPastTheLimitFailTheConnection: a header block that decodes to more than the
// advertised header list size, or holds a string longer than it, fails the connection at once
// instead of being kept in memory as it grows, whether its size is in its bytes (a string sent
// over CONTINUATION frames) or only in what they decode to (one field indexed again and again).
func TestHeaderBlocksPastTheLimitFailTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script func(rc *h2script.Conn, id uint32)
		want   string
	}{
		{"a string longer than the limit", func(rc *h2script.Conn, id uint32) {
			block := appendLiteral(rc.HeaderBlock(hpack.HeaderField{Name: ":status", Value: "200"}), "x-big", 100<<20)
			fr := rc.Framer()
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block}) != nil {
				return
			}
			filler := bytes.Repeat([]byte("a"), 16<<10)
			for range 200 { // 3.2 MiB of it, without END_HEADERS
				if fr.WriteContinuation(id, false, filler) != nil {
					return
				}
			}
		}, "string"},
		{"a field indexed past the limit", func(rc *h2script.Conn, id uint32) {
			big := hpack.HeaderField{Name: "x-big", Value: strings.Repeat("v", 1000)}
			fields := []hpack.HeaderField{{Name: ":status", Value: "200"}}
			for range 2048 { // 2 MiB decoded from about 3 KiB
				fields = append(fields, big)
			}
			_ = rc.Framer().WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.HeaderBlock(fields...), EndHeaders: true, EndStream: true})
		}, strconv.Itoa(maxHeaderListSizeForTest)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := h2script.New(t, nil, func(rc *h2script.Conn) {
				r, ok := rc.Request()
				if !ok {
					return
				}
				tc.script(rc, r.StreamID)
				hold(rc)
			})
			c := scriptedClient(t, srv, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), failFast)
			defer cancel()
			_, err := c.Do(ctx, &Request{Path: "/x"})
			var ce http2.ConnectionError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "header") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a connection error naming the header limit", err)
			}
		})
	}
}

// TestEndlessContinuationIsNotLiveness: a server that sends empty CONTINUATION frames forever grows
// no memory, and its frames do not count as signs of life: the health check's PING, which it cannot
// answer inside a header block, goes unanswered and the connection is lost.
func TestEndlessContinuationIsNotLiveness(t *testing.T) {
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		fr := rc.Framer()
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: r.StreamID, BlockFragment: rc.HeaderBlock(hpack.HeaderField{Name: ":status", Value: "200"})}) != nil {
			return
		}
		tick := time.NewTicker(5 * time.Millisecond) // frames well within the read idle timeout
		defer tick.Stop()
		for range tick.C {
			if fr.WriteContinuation(r.StreamID, false, nil) != nil {
				return
			}
		}
	})
	c := scriptedClient(t, srv, Config{ReadIdleTimeout: 50 * time.Millisecond, PingTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), failFast)
	defer cancel()
	_, err := c.Do(ctx, &Request{Path: "/x"})
	if err == nil || !strings.HasSuffix(err.Error(), "http2: client connection lost") {
		t.Fatalf("got %v, want the connection lost", err)
	}
}

// TestFrameLargerThanAdvertisedFailsTheConnection: the client never raises SETTINGS_MAX_FRAME_SIZE
// from its 16384 bytes, so a larger frame is a FRAME_SIZE_ERROR, not a buffer of up to 16 MiB read
// on the server's word.
func TestFrameLargerThanAdvertisedFailsTheConnection(t *testing.T) {
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		rc.Headers(r.StreamID, 200, "text/plain", false)
		rc.Data(r.StreamID, true, make([]byte, 32<<10))
		hold(rc)
	})
	c := scriptedClient(t, srv, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), failFast)
	defer cancel()
	_, err := c.Do(ctx, &Request{Path: "/x"})
	wantConnError(t, err, http2.ErrCodeFrameSize, "16384")
}

// TestDataPastTheStreamWindowIsAFlowControlError: a server that sends more of a stream than the
// window the client gave it breaks flow control (RFC 9113 §6.9.1): the stream fails.
func TestDataPastTheStreamWindowIsAFlowControlError(t *testing.T) {
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		rc.Headers(r.StreamID, 200, "text/plain", false)
		rc.Data(r.StreamID, true, make([]byte, 16<<10))
		hold(rc)
	})
	c := scriptedClient(t, srv, Config{StreamWindow: 4096})
	ctx, cancel := context.WithTimeout(context.Background(), failFast)
	defer cancel()
	_, err := c.Do(ctx, &Request{Path: "/x"})
	var se http2.StreamError
	if !errors.As(err, &se) || se.Code != http2.ErrCodeFlowControl || !strings.Contains(err.Error(), "4096") {
		t.Fatalf("got %v, want the stream's FLOW_CONTROL_ERROR naming its window", err)
	}
}

// TestUnaryBodyPastTheLimitFails: a unary answer is read into memory, so its body is bounded, and so
// is what a gzipped one inflates to: a 20 KiB gzip of 20 MiB of zeros, an answer to a Lease PUT,
// would otherwise cost the fleet 20 MiB per request.
func TestUnaryBodyPastTheLimitFails(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(make([]byte, 20<<20))
	_ = zw.Close()
	for _, tc := range []struct {
		name     string
		encoding string
		body     []byte
	}{
		{"plain", "", make([]byte, 17<<20)},
		{"gzipped", "gzip", zipped.Bytes()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := h2script.New(t, nil, func(rc *h2script.Conn) {
				r, ok := rc.Request()
				if !ok {
					return
				}
				fields := []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/vnd.kubernetes.protobuf"}}
				if tc.encoding != "" {
					fields = append(fields, hpack.HeaderField{Name: "content-encoding", Value: tc.encoding})
				}
				fr := rc.Framer()
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: r.StreamID, BlockFragment: rc.HeaderBlock(fields...), EndHeaders: true})
				for b := tc.body; len(b) > 0; {
					n := min(len(b), 16<<10)
					if fr.WriteData(r.StreamID, n == len(b), b[:n]) != nil {
						return
					}
					b = b[n:]
				}
				hold(rc)
			})
			c := scriptedClient(t, srv, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), failFast)
			defer cancel()
			resp, err := c.Do(ctx, &Request{Method: "PUT", Path: "/x", Body: []byte("lease")})
			if err == nil {
				t.Fatalf("an answer of %d bytes was read whole", len(resp.Body))
			}
			if !strings.Contains(err.Error(), strconv.Itoa(maxBodyForTest)) {
				t.Fatalf("got %v, want an error naming the limit of %d bytes", err, maxBodyForTest)
			}
		})
	}
}

// maxBodyForTest is client-go's bound on one object of a watch, which a unary answer takes too.
const maxBodyForTest = 16 << 20

// TestEndlessInformationalAnswersFail: a server that answers 100 Continue again and again, each a
// header block of its own and a sign of life, would hold a watch forever: past net/http's five, the
// request fails.
func TestEndlessInformationalAnswersFail(t *testing.T) {
	srv := h2script.New(t, nil, func(rc *h2script.Conn) {
		r, ok := rc.Request()
		if !ok {
			return
		}
		for range 6 {
			_ = rc.Framer().WriteHeaders(http2.HeadersFrameParam{StreamID: r.StreamID, BlockFragment: rc.HeaderBlock(hpack.HeaderField{Name: ":status", Value: "100"}), EndHeaders: true})
		}
		rc.Respond(r.StreamID, 200, "text/plain", []byte("ok"))
		hold(rc)
	})
	c := scriptedClient(t, srv, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), failFast)
	defer cancel()
	_, err := c.Do(ctx, &Request{Path: "/x"})
	if err == nil || !strings.Contains(err.Error(), "more than 5 informational") {
		t.Fatalf("got %v, want the request failed past 5 informational answers", err)
	}
}

// TestAnswerOfAStatedLengthIsReadIntoOneBuffer: a body in several DATA frames whose Content-Length
// says its size is read into a buffer of that size, made once; a claim above maxPresized is not
// taken at its word, and the buffer grows with what comes.
func TestAnswerOfAStatedLengthIsReadIntoOneBuffer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int
		claim int
		exact bool
	}{
		{"stated", 40 << 10, 40 << 10, true},
		{"claimed above the bound", 40 << 10, 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := pattern(tc.size)
			srv := h2script.New(t, nil, func(rc *h2script.Conn) {
				r, ok := rc.Request()
				if !ok {
					return
				}
				fr := rc.Framer()
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: r.StreamID, EndHeaders: true, BlockFragment: rc.HeaderBlock(
					hpack.HeaderField{Name: ":status", Value: "200"}, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(tc.claim)})})
				for b := body; len(b) > 0; {
					n := min(len(b), 16<<10)
					if fr.WriteData(r.StreamID, n == len(b), b[:n]) != nil {
						return
					}
					b = b[n:]
				}
				hold(rc)
			})
			resp, err := scriptedClient(t, srv, Config{}).Do(context.Background(), &Request{Path: "/x"})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(resp.Body, body) {
				t.Fatalf("a body of %d bytes came as %d bytes, not as sent", len(body), len(resp.Body))
			}
			if exact := cap(resp.Body) == tc.size; exact != tc.exact {
				t.Errorf("a body of %d bytes with a Content-Length of %d read into a buffer of %d", tc.size, tc.claim, cap(resp.Body))
			}
		})
	}
}
