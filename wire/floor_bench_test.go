package wire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// floorServerEnv makes the test binary echo floorMessage-byte messages over plain TCP until its
// stdin closes. It is checked in init rather than in TestMain so that the floor benchmark stands
// on its own: the server is no part of what it measures, only something to answer at once.
const floorServerEnv = "WIRE_FLOOR_SERVER"

// floorMessage is about what a paced renewal puts on the wire (BenchmarkDoPaced's request).
const floorMessage = 300

func init() {
	if os.Getenv(floorServerEnv) == "" {
		return
	}
	serveFloor()
	os.Exit(0)
}

func serveFloor() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				// Message by message rather than io.Copy, whose splice would hand the echo to
				// the kernel's pipe and answer on its own schedule.
				buf := make([]byte, floorMessage)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// floorServer starts the test binary as an echo server process, as serverProcess does for
// HTTP/2, and returns its address.
func floorServer(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floorServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the echo server process said nothing: %v", err)
	}
	return strings.TrimSpace(line)
}

// BenchmarkRoundTripFloor measures the least CPU a Go client can spend on one request that it
// wakes up for alone: no TLS, no HTTP/2, no framing, only floorMessage bytes written on one
// connection and floorMessage bytes read back from an echo server in a process of its own. What
// is left is the wakeups: the caller's timer, the reader's network readiness and, "hand-off",
// waking the caller with its answer. BenchmarkDoPaced's figure less this one is what the
// protocol costs; this one is what no protocol work can save.
//
// "hand-off" paces callers as BenchmarkDoPaced does (rate/10 of them, each asleep 100 ms and
// the kubelet's 4% jitter between its requests) and a reader goroutine hands each answer to its
// caller. "one goroutine" sends requests evenly spaced from a single goroutine and its reader
// only reads: one timer wakeup and one network wakeup a request, the least a Go client can do.
// Its sleeps/op says how many requests had a timer wakeup of their own: below 1, the runtime's
// millisecond timer resolution (netpoll's epoll timeout) sent several on one wakeup.
//
//	go test -run XXX -bench BenchmarkRoundTripFloor -benchtime 3000x ./wire
func BenchmarkRoundTripFloor(b *testing.B) {
	addr := floorServer(b)
	for _, rate := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("%d per second, hand-off", rate), func(b *testing.B) {
			benchmarkFloorHandOff(b, addr, rate)
		})
		b.Run(fmt.Sprintf("%d per second, one goroutine", rate), func(b *testing.B) {
			benchmarkFloorOneGoroutine(b, addr, rate)
		})
	}
}

// floorConn dials addr and makes one round trip, so that the measured ones find the connection
// and the server's goroutine ready.
func floorConn(b *testing.B, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, floorMessage)
	if _, err := c.Write(buf); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil {
		b.Fatal(err)
	}
	return c
}

func benchmarkFloorHandOff(b *testing.B, addr string, rate int) {
	c := floorConn(b, addr)
	const every = 100 * time.Millisecond
	callers := rate / 10
	// The caller's index in the message, as a stream's ID in a frame, tells the reader whose
	// answer it is; a slice indexed by it is the cheapest lookup a client could have.
	answered := make([]chan struct{}, callers)
	for i := range answered {
		answered[i] = make(chan struct{}, 1)
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		r := bufio.NewReader(c)
		buf := make([]byte, floorMessage)
		for {
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			answered[binary.BigEndian.Uint32(buf)] <- struct{}{}
		}
	}()
	// Closing the connection is what ends the reader, and goleak wants it ended.
	defer func() { c.Close(); <-readerDone }()
	var left atomic.Int64
	left.Store(int64(b.N))
	runtime.GC()
	cpu0 := cpuTime()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			msg := make([]byte, floorMessage)
			binary.BigEndian.PutUint32(msg, uint32(i))
			time.Sleep(rand.N(every))
			for left.Add(-1) >= 0 {
				// net.Conn's Write holds the socket's write lock for the whole message, so
				// callers' messages do not interleave.
				if _, err := c.Write(msg); err != nil {
					b.Error(err)
					return
				}
				<-answered[i]
				time.Sleep(every + rand.N(every/25))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

func benchmarkFloorOneGoroutine(b *testing.B, addr string, rate int) {
	c := floorConn(b, addr)
	every := time.Second / time.Duration(rate)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		r := bufio.NewReader(c)
		buf := make([]byte, floorMessage)
		for range b.N {
			if _, err := io.ReadFull(r, buf); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	defer func() { c.Close(); <-readerDone }()
	msg := make([]byte, floorMessage)
	sleeps := 0
	runtime.GC()
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		// Due times from the start rather than sleeps of every, so that a late wakeup does not
		// lower the rate: the requests it made late go out at once, without a wakeup of their own.
		if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
			sleeps++
		}
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	<-readerDone
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(sleeps)/float64(b.N), "sleeps/op")
}
