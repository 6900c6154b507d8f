// Package pause waits on the wall clock for as long as a context lasts: the waits of the commands
// that let a real control plane settle or measure it for a while, and a server's Retry-After.
package pause

import (
	"context"
	"time"
)

// For waits d, and returns ctx's error if ctx ends first.
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
