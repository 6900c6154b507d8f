package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// lineWriter passes each write on to a channel, so a test can wait for a line instead of sleeping.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) { w <- string(p); return len(p), nil }

// TestAfterRunWaitHoldsUntilTheSignal: with --after-run=wait, hold says once that it waits and
// why, and returns only when its context (the signal context) ends; with exit, it returns at once.
func TestAfterRunWaitHoldsUntilTheSignal(t *testing.T) {
	var rf runFlags
	cmd := newRunCommandFor(&rf)
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if rf.afterRun != afterRunExit {
		t.Errorf("--after-run defaults to %q, want exit", rf.afterRun)
	}
	rf.afterRun.hold(context.Background(), io.Discard, "") // exit: must return, or the test hangs

	if err := cmd.ParseFlags([]string{"--after-run=wait"}); err != nil || rf.afterRun != afterRunWait {
		t.Fatalf("--after-run=wait: %q, %v", rf.afterRun, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := make(lineWriter, 10)
	done := make(chan struct{})
	go func() { rf.afterRun.hold(ctx, log, "http://127.0.0.1:9464/metrics"); close(done) }()
	line := <-log
	for _, want := range []string{"waiting for SIGTERM or Ctrl-C", "--after-run=wait", "http://127.0.0.1:9464/metrics", "final counters"} {
		if !strings.Contains(line, want) {
			t.Errorf("the waiting line %q lacks %q", line, want)
		}
	}
	select { // a bounded look for a wrong return; the waits above and below are on events
	case <-done:
		t.Fatal("hold returned before the signal")
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("hold still waits 10 s after its context ended")
	}
	if len(log) != 0 {
		t.Errorf("hold logged more than once: %q", <-log)
	}
}

func TestAfterRunRefusesOtherValues(t *testing.T) {
	var rf runFlags
	err := newRunCommandFor(&rf).ParseFlags([]string{"--after-run=sleep"})
	if err == nil || !strings.Contains(err.Error(), `invalid argument "sleep" for "--after-run" flag: want exit or wait`) {
		t.Errorf("--after-run=sleep: %v", err)
	}
}
