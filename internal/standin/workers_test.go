package standin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAWriteIsAppliedWhenEveryWorkerIsBusyAndItsPanicRaisedWhereItWasAsked: a write that finds
// every worker busy is applied on its own goroutine, not queued behind them; a write's panic
// reaches the request's goroutine, where x/net's server recovers it as it did.
func TestAWriteIsAppliedWhenEveryWorkerIsBusyAndItsPanicRaisedWhereItWasAsked(t *testing.T) {
	s := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.workers = startWorkers(ctx, 1)
	req := func() *http.Request { return httptest.NewRequest(http.MethodPut, "/", nil) }
	release, entered := make(chan struct{}), make(chan struct{})
	time.Sleep(10 * time.Millisecond) // the worker waits for a job
	go func() {
		_, _, _ = s.write(req(), maxBody, func([]byte) (*entry, int, error) {
			entered <- struct{}{}
			<-release
			return nil, http.StatusOK, nil
		})
	}()
	<-entered
	done := make(chan error)
	go func() {
		_, _, err := s.write(req(), maxBody, func([]byte) (*entry, int, error) { return nil, 0, errors.New("applied") })
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != "applied" {
			t.Errorf("the write returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write waited for the busy worker")
	}
	close(release)

	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("the write's panic reached the request's goroutine as %v", p)
		}
	}()
	time.Sleep(10 * time.Millisecond) // the worker is free again
	_, _, _ = s.write(req(), maxBody, func([]byte) (*entry, int, error) { panic(http.ErrAbortHandler) })
}
