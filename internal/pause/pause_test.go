package pause

import (
	"context"
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestForEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("a wait of an hour on a canceled context: %v, want context.Canceled", err)
	}
	if err := For(context.Background(), 0); err != nil {
		t.Errorf("a wait of nothing: %v", err)
	}
}

// TestOnWaitsOnItsClock: a wait of an hour on a fake clock ends when the clock has moved an hour,
// not before.
func TestOnWaitsOnItsClock(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	done := make(chan error, 1)
	go func() { done <- On(context.Background(), fc, time.Hour) }()
	for !fc.HasWaiters() {
		time.Sleep(time.Millisecond) // no event says the timer was made
	}
	fc.Step(time.Hour - time.Second)
	select {
	case err := <-done:
		t.Fatalf("the wait ended (%v) a second before its hour", err)
	default:
	}
	fc.Step(time.Second)
	if err := <-done; err != nil {
		t.Errorf("the wait of an hour ended with %v", err)
	}
}
