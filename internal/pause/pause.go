// Package pause waits on a clock for as long as a context lasts: a server's Retry-After on the
// fleet's clock (On), and on the wall clock (For) the waits of the commands that let a real control
// plane settle or measure it for a while.
package pause

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// On waits d on clk, and returns ctx's error if ctx ends first. A wait of nothing returns at once,
// as a fake clock's timer of 0 would only fire when the clock moves.
func On(ctx context.Context, clk clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// For waits d on the wall clock, and returns ctx's error if ctx ends first.
func For(ctx context.Context, d time.Duration) error { return On(ctx, clock.RealClock{}, d) }
