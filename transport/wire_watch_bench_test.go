package transport

import (
	"context"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/internal/h2script"
)

// BenchmarkWatchHeld measures what a watch costs the fleet while it waits for events, over the wire
// package and over the legacy net/http path: each op opens one watch and holds it, and the heap and
// the goroutines they all hold are reported per watch. The server is a scripted one that keeps no
// state per stream, so what is measured is the client's. Run with -benchtime=Nx for N watches.
func BenchmarkWatchHeld(b *testing.B) {
	for _, path := range []struct {
		name   string
		legacy bool
	}{{"wire", false}, {"legacy", true}} {
		b.Run(path.name, func(b *testing.B) {
			srv := h2script.New(b, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 100}}, func(fc *h2script.Conn) {
				for {
					e, ok := fc.Next()
					if !ok {
						return
					}
					if !e.Reset {
						fc.Headers(e.StreamID, 200, watchContentType, false)
					}
				}
			})
			clients := watchClients(b, srv.URL(), srv.CA(), path.legacy)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx, _ = agent.RequestContext(ctx, "fakelet-00001")
			// One watch first: the connections' own costs are not the watches'.
			warm := &countOpened{all: make(chan struct{}), want: 1}
			clients.Watches.Watch(ctx, podsWatch, warm)
			<-warm.all

			h := &countOpened{all: make(chan struct{}), want: int32(b.N)}
			before, goroutines := heapInUse(), runtime.NumGoroutine()
			b.ResetTimer()
			for range b.N {
				clients.Watches.Watch(ctx, podsWatch, h)
			}
			select {
			case <-h.all:
			case <-time.After(2 * time.Minute):
				b.Fatalf("%d of %d watches answered", h.opened.Load(), b.N)
			}
			b.StopTimer()
			if n := h.failed.Load(); n > 0 {
				b.Fatalf("%d of %d watches failed: %v", n, b.N, h.err.Load())
			}
			b.ReportMetric(float64(heapInUse()-before)/float64(b.N), "heap-B/watch")
			b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(b.N), "goroutines/watch")
			b.ReportMetric(float64(srv.Accepted()), "conns")
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse) + int64(m.StackInuse)
}

// countOpened closes all when want watches are answered.
type countOpened struct {
	opened, failed atomic.Int32
	err            atomic.Value
	want           int32
	all            chan struct{}
}

func (c *countOpened) Opened(err error) {
	if err != nil {
		c.failed.Add(1)
		c.err.Store(err)
	}
	if c.opened.Add(1) == c.want {
		close(c.all)
	}
}
func (c *countOpened) Event(agent.WatchEvent) {}
func (c *countOpened) Ended(error)            {}

// BenchmarkWatchEvent measures the CPU of one event delivered to its handler, over the wire package
// and over the legacy path: a pod's MODIFIED event as kube-apiserver sends it, flushed on its own,
// from Go's HTTP/2 server in the same process (whose cost is in both).
func BenchmarkWatchEvent(b *testing.B) {
	event := protobufStream(b, watchEvents(b)[2:3])
	for _, path := range []struct {
		name   string
		legacy bool
	}{{"wire", false}, {"legacy", true}} {
		b.Run(path.name, func(b *testing.B) {
			n := b.N
			srv := serveTLS(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", watchContentType)
				w.WriteHeader(http.StatusOK)
				f := w.(http.Flusher)
				for range n {
					_, _ = w.Write(event)
					f.Flush()
				}
			}))
			clients := watchClients(b, srv.URL, certOf(srv), path.legacy)
			h := &countEvents{want: int64(n), all: make(chan struct{}), ended: make(chan error, 1)}
			b.ReportAllocs()
			b.ResetTimer()
			clients.Watches.Watch(context.Background(), podsWatch, h)
			<-h.all
			b.StopTimer()
			if err := <-h.ended; err != nil {
				b.Fatal(err)
			}
		})
	}
}

type countEvents struct {
	n, want int64
	all     chan struct{}
	ended   chan error
}

func (c *countEvents) Opened(err error) {
	if err != nil {
		c.ended <- err
		close(c.all)
	}
}

func (c *countEvents) Event(e agent.WatchEvent) {
	if e.Type != agent.EventModified {
		panic(e.Type)
	}
	if c.n++; c.n == c.want {
		close(c.all)
	}
}
func (c *countEvents) Ended(err error) { c.ended <- err }
