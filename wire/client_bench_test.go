package wire

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDo sends small requests from many callers at once to Go's own HTTP/2 server, flushing
// as soon as the writer's queue is empty and with the largest flush window, and reports the writes
// (syscalls) per request.
func BenchmarkDo(b *testing.B) {
	for _, window := range []time.Duration{0, MaxFlushWindow} {
		b.Run("flush window "+window.String(), func(b *testing.B) {
			var writes atomic.Int64
			ts := goServerTB(b)
			c := goClient(b, ts, Config{FlushWindow: window, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				return countingConn{nc, &writes}, err
			}})
			req := &Request{Method: "PUT", Path: "/x?timeout=10s", Header: []Field{{"content-type", "application/vnd.kubernetes.protobuf"}},
				Own: []Field{{"impersonate-user", "system:node:fakelet-00007"}}, Body: make([]byte, 263)}
			b.ReportAllocs()
			b.SetParallelism(16)
			writes.Store(0)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Do(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(writes.Load())/float64(b.N), "writes/op")
		})
	}
}
