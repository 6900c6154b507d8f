package wire

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkDoPaced sends requests as a fleet does: many callers, each asleep between its own
// requests (every 100 ms with the kubelet's 4% jitter), so that most requests find the connection
// idle and each costs its wakeups rather than a share of a busy loop. It reports the process's CPU
// time per request (the client's alone: Go's server runs in a process of its own), the writes
// (syscalls) per request, and how long requests waited between Do and the write that sent them
// (mean and most).
func BenchmarkDoPaced(b *testing.B) {
	for _, rate := range []int{100, 500, 2000} {
		for _, window := range []time.Duration{0, MaxFlushWindow} {
			b.Run(fmt.Sprintf("%d per second, flush window %v", rate, window), func(b *testing.B) {
				benchmarkDoPaced(b, rate, window)
			})
		}
	}
}

func benchmarkDoPaced(b *testing.B, rate int, window time.Duration) {
	{
		{
			var writes atomic.Int64
			var lag lagMeter
			cfg := serverProcess(b)
			cfg.FlushWindow = window
			cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				return lagConn{countingConn{nc, &writes}, &lag}, err
			}
			c, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := &Request{Method: "PUT", Path: "/x?timeout=10s", Header: []Field{{"content-type", "application/vnd.kubernetes.protobuf"}},
				Own: []Field{{"impersonate-user", "system:node:fakelet-00007"}}, Body: make([]byte, 263)}
			if _, err := c.Do(context.Background(), req); err != nil {
				b.Fatal(err)
			}
			const every = 100 * time.Millisecond
			callers := rate / 10
			var left atomic.Int64
			left.Store(int64(b.N))
			writes.Store(0)
			runtime.GC()
			cpu0 := cpuTime()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					time.Sleep(rand.N(every))
					for left.Add(-1) >= 0 {
						lag.queued()
						if _, err := c.Do(context.Background(), req); err != nil {
							b.Error(err)
							return
						}
						time.Sleep(every + rand.N(every/25))
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(writes.Load())/float64(b.N), "writes/op")
			mean, most := lag.result()
			b.ReportMetric(float64(mean)/float64(time.Microsecond), "lag-mean-µs")
			b.ReportMetric(float64(most)/float64(time.Microsecond), "lag-max-µs")
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lagMeter measures how long queued requests wait for the write that sends them: each write
// takes every request queued before it.
type lagMeter struct {
	mu      sync.Mutex
	waiting []time.Time
	sum     time.Duration
	n       int
	most    time.Duration
}

func (l *lagMeter) queued() {
	l.mu.Lock()
	l.waiting = append(l.waiting, time.Now())
	l.mu.Unlock()
}

func (l *lagMeter) written() {
	now := time.Now()
	l.mu.Lock()
	for _, t := range l.waiting {
		d := now.Sub(t)
		l.sum += d
		l.n++
		l.most = max(l.most, d)
	}
	l.waiting = l.waiting[:0]
	l.mu.Unlock()
}

func (l *lagMeter) result() (mean, most time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return 0, 0
	}
	return l.sum / time.Duration(l.n), l.most
}

type lagConn struct {
	countingConn
	lag *lagMeter
}

func (c lagConn) Write(p []byte) (int, error) {
	n, err := c.countingConn.Write(p)
	c.lag.written()
	return n, err
}
