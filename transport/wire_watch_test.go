package transport

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"golang.org/x/net/http2"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/h2script"
)

const watchContentType = "application/vnd.kubernetes.protobuf;stream=watch"

// wireWatchClients returns the fleet's heartbeat clients of a scripted server, over the wire package.
func wireWatchClients(t *testing.T, s *h2script.Server) agent.Clients {
	t.Helper()
	return watchClients(t, s.URL(), s.CA(), false)
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
			srv := h2script.New(t, nil, func(fc *h2script.Conn) {
				for {
					e, ok := fc.Next()
					if !ok {
						return
					}
					if e.Reset {
						continue
					}
					fc.Headers(e.StreamID, 200, watchContentType, false)
					for i := 0; i < len(body); i += tc.frame {
						fc.Data(e.StreamID, false, body[i:min(i+tc.frame, len(body))])
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
		script func(fc *h2script.Conn, id uint32, resets chan<- uint32)
		cancel bool // the client's context ends after the first event
		events int
		clean  bool // ends with nil
	}{
		{"reset by the server", func(fc *h2script.Conn, id uint32, _ chan<- uint32) {
			fc.Reset(id, http2.ErrCodeInternal)
		}, false, 1, false},
		{"connection dropped", func(fc *h2script.Conn, id uint32, _ chan<- uint32) {
			fc.Close()
		}, false, 1, false},
		{"GOAWAY while the stream is open", func(fc *h2script.Conn, id uint32, _ chan<- uint32) {
			fc.GoAway(id, http2.ErrCodeNo, nil)
			fc.Data(id, true, rest)
		}, false, 3, true},
		{"context cancelled", func(fc *h2script.Conn, id uint32, resets chan<- uint32) {
			for {
				e, ok := fc.Next()
				if !ok {
					return
				}
				if e.Reset {
					resets <- e.StreamID
					return
				}
			}
		}, true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resets := make(chan uint32, 1)
			srv := h2script.New(t, nil, func(fc *h2script.Conn) {
				e, ok := fc.Next()
				if !ok {
					return
				}
				fc.Headers(e.StreamID, 200, watchContentType, false)
				fc.Data(e.StreamID, false, first)
				tc.script(fc, e.StreamID, resets)
				for {
					if _, ok := fc.Next(); !ok {
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
	leaseBody := encode(t, Protobuf, coordinationv1.SchemeGroupVersion, lease)
	var mu sync.Mutex
	open := map[*h2script.Conn]int{}
	var refused atomic.Int32
	srv := h2script.New(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: limit}}, func(fc *h2script.Conn) {
		for {
			e, ok := fc.Next()
			if !ok {
				return
			}
			switch {
			case e.Reset:
				mu.Lock()
				open[fc]--
				mu.Unlock()
			case e.Get(":method") == http.MethodPut:
				fc.Respond(e.StreamID, 200, Protobuf, leaseBody)
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
					fc.Reset(e.StreamID, http2.ErrCodeRefusedStream)
					refused.Add(1)
					continue
				}
				fc.Headers(e.StreamID, 200, watchContentType, false) // and held open
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
	if n := srv.Accepted(); n != 3 {
		t.Errorf("%d connections for %d watches, want 3", n, watches)
	}
	rctx, _ := agent.RequestContext(context.Background(), lease.Name)
	rctx, stop := context.WithTimeout(rctx, 10*time.Second)
	defer stop()
	if _, err := clients.Coordination.Leases(agent.LeaseNamespace).Update(rctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("lease renewal beside the watches: %v", err)
	}
	if n := srv.Accepted(); n != 4 {
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
