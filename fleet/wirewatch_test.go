package fleet

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"fakelet.dev/fakelet/agent"
)

// frameServer is a scripted HTTP/2 server over TLS that writes the frames of its answers itself, for
// what Go's server does not let a test choose: where DATA frames are cut, GOAWAY in the middle of a
// stream, a dropped connection. Each connection is handed to serve once its preface is read and
// the server's SETTINGS are written.
type frameServer struct {
	ln    net.Listener
	ca    []byte
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns int
}

func newFrameServer(t testing.TB, settings []http2.Setting, serve func(*frameConn)) *frameServer {
	t.Helper()
	certs := httptest.NewUnstartedServer(nil)
	certs.StartTLS()
	cert, ca := certs.TLS.Certificates[0], certOf(certs)
	certs.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &frameServer{ln: ln, ca: ca}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer nc.Close()
				fc := &frameConn{nc: nc, fr: http2.NewFramer(nc, nc), dec: hpack.NewDecoder(4096, nil)}
				fc.enc = hpack.NewEncoder(&fc.hbuf)
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(nc, preface); err != nil {
					return
				}
				if err := fc.fr.WriteSettings(settings...); err != nil {
					return
				}
				serve(fc)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *frameServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

func (s *frameServer) host() string { return "https://" + s.ln.Addr().String() }

// frameConn is the server's side of one connection; one goroutine uses it.
type frameConn struct {
	nc   net.Conn
	fr   *http2.Framer
	dec  *hpack.Decoder
	enc  *hpack.Encoder
	hbuf bytes.Buffer
}

// frameEvent is what the client sent that a script waits for: a request, or the reset of a stream.
type frameEvent struct {
	id     uint32
	path   string
	method string
	reset  bool
}

// next reads frames until a request's headers or a RST_STREAM, answering SETTINGS; false when the
// connection ends.
func (fc *frameConn) next() (frameEvent, bool) {
	for {
		f, err := fc.fr.ReadFrame()
		if err != nil {
			return frameEvent{}, false
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fc.fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			fields, err := fc.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				return frameEvent{}, false
			}
			e := frameEvent{id: f.StreamID}
			for _, hf := range fields {
				switch hf.Name {
				case ":path":
					e.path = hf.Value
				case ":method":
					e.method = hf.Value
				}
			}
			return e, true
		case *http2.DataFrame:
			if n := len(f.Data()); n > 0 {
				_ = fc.fr.WriteWindowUpdate(0, uint32(n))
			}
		case *http2.RSTStreamFrame:
			return frameEvent{id: f.StreamID, reset: true}, true
		}
	}
}

// headers answers stream id with status and a content type, leaving the stream open.
func (fc *frameConn) headers(id uint32, status int, contentType string, end bool) {
	fc.hbuf.Reset()
	_ = fc.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	_ = fc.enc.WriteField(hpack.HeaderField{Name: "content-type", Value: contentType})
	_ = fc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: fc.hbuf.Bytes(), EndHeaders: true, EndStream: end})
}

const watchContentType = "application/vnd.kubernetes.protobuf;stream=watch"

// wireWatchClients returns the fleet's heartbeat clients of a frame server, over the wire package.
func wireWatchClients(t *testing.T, s *frameServer) agent.Clients {
	t.Helper()
	return watchClients(t, s.host(), s.ca, false)
}

func sameEvents(t *testing.T, got, want []agent.WatchEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestWireWatchReadsDataFramesCutAnywhere: the same events and the same 410 whether every byte of
// the body comes in a DATA frame of its own or the whole body in one.
func TestWireWatchReadsDataFramesCutAnywhere(t *testing.T) {
	body := protobufStream(t, watchEvents(t))
	for _, tc := range []struct {
		name  string
		frame int
	}{{"a byte per DATA frame", 1}, {"every event in one DATA frame", len(body)}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFrameServer(t, nil, func(fc *frameConn) {
				for {
					e, ok := fc.next()
					if !ok {
						return
					}
					if e.reset {
						continue
					}
					fc.headers(e.id, 200, watchContentType, false)
					for i := 0; i < len(body); i += tc.frame {
						_ = fc.fr.WriteData(e.id, false, body[i:min(i+tc.frame, len(body))])
					}
				}
			})
			s := newRecordedStream()
			wireWatchClients(t, srv).Watches.Watch(context.Background(), podsWatch, s)
			err := s.wait(t)
			opened, events, _ := s.seen()
			if len(opened) != 1 || opened[0] != nil {
				t.Fatalf("opened %v", opened)
			}
			sameEvents(t, events, wantEvents)
			if !apierrors.IsResourceExpired(err) {
				t.Errorf("ended with %v, want the 410 of the ERROR event", err)
			}
		})
	}
}

// TestWireWatchEnds: each way a stream can end reaches its handler once, as the reflector needs it:
// nil at the server's end of the stream, an error that is not a Status for a reset stream or a
// dropped connection (the reflector relists), and a stream its context ended is reset on the wire.
func TestWireWatchEnds(t *testing.T) {
	first := protobufStream(t, watchEvents(t)[:1])
	rest := protobufStream(t, watchEvents(t)[1:3])
	for _, tc := range []struct {
		name   string
		script func(fc *frameConn, id uint32, resets chan<- uint32)
		cancel bool // the client's context ends after the first event
		events int
		clean  bool // ends with nil
	}{
		{"reset by the server", func(fc *frameConn, id uint32, _ chan<- uint32) {
			_ = fc.fr.WriteRSTStream(id, http2.ErrCodeInternal)
		}, false, 1, false},
		{"connection dropped", func(fc *frameConn, id uint32, _ chan<- uint32) {
			fc.nc.Close()
		}, false, 1, false},
		{"GOAWAY while the stream is open", func(fc *frameConn, id uint32, _ chan<- uint32) {
			_ = fc.fr.WriteGoAway(id, http2.ErrCodeNo, nil)
			_ = fc.fr.WriteData(id, true, rest)
		}, false, 3, true},
		{"context cancelled", func(fc *frameConn, id uint32, resets chan<- uint32) {
			for {
				e, ok := fc.next()
				if !ok {
					return
				}
				if e.reset {
					resets <- e.id
					return
				}
			}
		}, true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resets := make(chan uint32, 1)
			srv := newFrameServer(t, nil, func(fc *frameConn) {
				e, ok := fc.next()
				if !ok {
					return
				}
				fc.headers(e.id, 200, watchContentType, false)
				_ = fc.fr.WriteData(e.id, false, first)
				tc.script(fc, e.id, resets)
				for {
					if _, ok := fc.next(); !ok {
						return
					}
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &cancelAfterFirst{recordedStream: newRecordedStream()}
			if tc.cancel {
				s.cancel = cancel
			}
			wireWatchClients(t, srv).Watches.Watch(ctx, podsWatch, s)
			err := s.wait(t)
			if tc.cancel {
				select {
				case <-resets:
				case <-time.After(20 * time.Second):
					t.Fatal("the server saw no RST_STREAM of the cancelled watch")
				}
			}
			opened, events, ends := s.seen()
			if len(opened) != 1 || opened[0] != nil || ends != 1 {
				t.Fatalf("opened %v, ended %d times", opened, ends)
			}
			if len(events) != tc.events {
				t.Errorf("%d events, want %d", len(events), tc.events)
			}
			if tc.clean != (err == nil) {
				t.Errorf("ended with %v", err)
			}
			if _, isStatus := err.(apierrors.APIStatus); isStatus {
				t.Errorf("ended with a Status %v, which the reflector would not relist after", err)
			}
		})
	}
}

// cancelAfterFirst ends its watch's context at the first event, if cancel is set.
type cancelAfterFirst struct {
	*recordedStream
	cancel func()
}

func (s *cancelAfterFirst) Event(e agent.WatchEvent) {
	s.recordedStream.Event(e)
	if s.cancel != nil {
		s.cancel()
	}
}

// TestWatchesBeyondMaxConcurrentStreams: with the server's limit of 2 streams per connection, 5
// watches held open take 3 connections of their own rather than waiting for each other (those sent
// on a new connection before its SETTINGS arrived and refused go again on another), and a lease
// renewal still goes, over the heartbeats' connection. (kube-apiserver's limit, 100 by default, is
// what a client assumes before the SETTINGS, so it refuses none.)
func TestWatchesBeyondMaxConcurrentStreams(t *testing.T) {
	const limit, watches = 2, 5
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00001", Namespace: agent.LeaseNamespace, ResourceVersion: "2"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("fakelet-00001")}}
	leaseBody := encode(t, protobuf, coordinationv1.SchemeGroupVersion, lease)
	var mu sync.Mutex
	open := map[*frameConn]int{}
	var refused atomic.Int32
	srv := newFrameServer(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: limit}}, func(fc *frameConn) {
		for {
			e, ok := fc.next()
			if !ok {
				return
			}
			switch {
			case e.reset:
				mu.Lock()
				open[fc]--
				mu.Unlock()
			case e.method == http.MethodPut:
				fc.headers(e.id, 200, protobuf, false)
				_ = fc.fr.WriteData(e.id, true, leaseBody)
			default:
				mu.Lock()
				full := open[fc] == limit
				if !full {
					open[fc]++
				}
				mu.Unlock()
				if full {
					// Streams the client opened before it read the SETTINGS: refused, as Go's
					// server does, for the client to send again.
					_ = fc.fr.WriteRSTStream(e.id, http2.ErrCodeRefusedStream)
					refused.Add(1)
					continue
				}
				fc.headers(e.id, 200, watchContentType, false) // and held open
			}
		}
	})
	clients := wireWatchClients(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := make([]*openedStream, watches)
	for i := range streams {
		streams[i] = &openedStream{recordedStream: newRecordedStream(), opened: make(chan error, 1)}
		clients.Watches.Watch(ctx, podsWatch, streams[i])
		if i == 0 {
			// The first answer comes after the server's SETTINGS: the limit is known from then on.
			if err := streams[0].waitOpened(t); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range streams[1:] {
		if err := s.waitOpened(t); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.accepted(); n != 3 {
		t.Errorf("%d connections for %d watches, want 3", n, watches)
	}
	rctx, _ := agent.RequestContext(context.Background(), lease.Name)
	rctx, stop := context.WithTimeout(rctx, 10*time.Second)
	defer stop()
	if _, err := clients.Coordination.Leases(agent.LeaseNamespace).Update(rctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("lease renewal beside the watches: %v", err)
	}
	if n := srv.accepted(); n != 4 {
		t.Errorf("%d connections, want 3 for the watches and 1 for the heartbeats", n)
	}
	t.Logf("%d watches refused and sent again", refused.Load())
}

// openedStream signals its Opened.
type openedStream struct {
	*recordedStream
	opened chan error
}

func (s *openedStream) Opened(err error) {
	s.recordedStream.Opened(err)
	s.opened <- err
}

func (s *openedStream) waitOpened(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.opened:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the watch was not answered")
		return nil
	}
}
