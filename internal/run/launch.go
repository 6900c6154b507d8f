package run

import (
	"context"
	"strings"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/measure"
)

// Launch checks the cluster before anything is written (f's preflight), starts recording f on s if
// s is not nil, and runs f in the background until ctx ends: done receives what f.Run returned,
// once the fleet has cleaned up. The record ends by itself when ctx does, before the fleet deletes
// its nodes. Every command that runs a fleet starts it this way: fakelet run and capacity through
// a Run, fakelet compare and bench's reference with fleets of their own.
func Launch(ctx context.Context, f *fleet.Fleet, s *measure.Session) (done <-chan error, err error) {
	if err := f.Preflight(ctx); err != nil {
		return nil, err
	}
	if s != nil {
		s.Observe(f)
		nodes := f.Config().NamePrefix + "-"
		if err := s.Start(context.WithoutCancel(ctx), func(name string) bool { return strings.HasPrefix(name, nodes) }); err != nil {
			return nil, err
		}
		go func() { <-ctx.Done(); s.Stop() }()
	}
	ran := make(chan error, 1)
	go func() { ran <- f.Run(ctx) }()
	return ran, nil
}
