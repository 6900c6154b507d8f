package run

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"

	"fakelet.dev/fakelet/capacity"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/lockstep"
	"fakelet.dev/fakelet/internal/pause"
)

// capacityShards is a sharded run's lockstep, on the board where the shards' verdicts meet.
type capacityShards struct {
	lockstep capacity.Lockstep
	board    *lockstep.Board
}

// openShards opens this shard's verdict board once the start is known (with --start-at auto, r's
// set-up agreed on it), before anything is written.
func (r *Run) openShards(ctx context.Context, steps capacity.Config, ls *capacity.Lockstep) (*capacityShards, error) {
	sf, log := &r.o.Shard, r.log
	client, err := kubernetes.NewForConfig(r.tgt.Config)
	if err != nil {
		return nil, err
	}
	holder, err := sf.Holder()
	if err != nil {
		return nil, err
	}
	b, err := lockstep.OpenBoard(ctx, lockstep.BoardOptions{Client: client, Namespace: sf.Namespace, Fleet: r.cfg.Config().Fleet, Shard: sf.Shard,
		Holder: holder, Run: sf.Run, Start: sf.StartAt, Owner: r.start, Log: log})
	if err != nil {
		return nil, err
	}
	l := *ls
	l.Start, l.Verdicts = sf.StartAt, capacity.BoardVerdicts{Board: b}
	fc := r.f.Config()
	fmt.Fprintf(log, "capacity: shard %v: its part of each step from node %s on (%d of the first step's %d, %d of --max's %d); "+
		"the first step's settle begins at %s (in %v) in every shard; verdicts in Leases in %s\n",
		sf.Shard, fleetname.NodeName(fc.NamePrefix, fc.FirstIndex), l.Nodes(steps.Start), steps.Start, l.Nodes(steps.Max), steps.Max,
		l.Start.Format(time.RFC3339), time.Until(l.Start).Round(time.Second), sf.Namespace)
	return &capacityShards{lockstep: l, board: b}, nil
}

// close deletes this shard's verdicts once every shard has had until its due time to read them, at
// once if the run was interrupted (every shard is being stopped).
func (s *capacityShards) close(ctx context.Context, log io.Writer) {
	if keep := s.board.KeepUntil(); time.Until(keep) > 0 && ctx.Err() == nil {
		fmt.Fprintf(log, "capacity: keeping this shard's verdicts for the other shards until %s\n", keep.Format(time.RFC3339))
		_ = pause.For(ctx, time.Until(keep))
	}
	if err := s.board.Close(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintln(log, "capacity:", err)
	}
}
