package run

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/utils/clock"

	"fakelet.dev/fakelet/capacity"
	"fakelet.dev/fakelet/report"
)

// Capacity grows the fleet step by step on the target, as steps say (in lockstep with the other
// shards if l is not nil), then writes the report and deletes the fleet. A step that breaks a level
// is the answer, not an error.
func (r *Run) Capacity(ctx context.Context, steps capacity.Config, l *capacity.Lockstep) error {
	fmt.Fprintf(r.log, "capacity: steps of %d from %d to %d nodes, each settling %v and held %v\n",
		steps.Step, steps.Start, steps.Max, steps.Settle, steps.Hold)
	var shards *capacityShards
	if l != nil {
		var err error
		if shards, err = r.openShards(ctx, steps, l); err != nil {
			return err
		}
		defer shards.close(ctx, r.log)
	}
	runCtx, endRun := context.WithCancel(ctx)
	defer endRun()
	fleetDone, err := Launch(runCtx, r.f, r.rr.session)
	if err != nil {
		return err
	}
	select {
	case <-r.f.Running():
	case err := <-fleetDone:
		return err
	}
	stepsCtx, endSteps := context.WithCancel(runCtx)
	g := newGrower(r.f, r.rr.session, r.log, nodes(l))
	var res capacity.Result
	var stepsErr error
	stepsDone := make(chan struct{})
	go func() {
		defer close(stepsDone)
		if shards != nil {
			res, stepsErr = capacity.RunInLockstep(stepsCtx, steps, shards.lockstep, g, clock.RealClock{})
		} else {
			res, stepsErr = capacity.Run(stepsCtx, steps, g, clock.RealClock{})
		}
	}()
	var runErr error
	select {
	case <-stepsDone:
	case runErr = <-fleetDone: // the fleet stopped under the steps: they end with it
		endSteps()
		<-stepsDone
	}
	endSteps()
	r.rr.session.Stop()
	rep := r.capacityReport(steps, res, g.size(), shards)
	_, writeErr := WriteReport(rep, r.o.Report.Dir, "capacity", r.out, r.log)
	endRun()
	if runErr == nil {
		runErr = <-fleetDone
	}
	if runErr == nil {
		fmt.Fprintln(r.log, "deleted the fleet's Nodes and Leases")
	}
	return errors.Join(stepsErr, r.left(runErr), writeErr)
}

// nodes is how many nodes this process runs in the step of a fleet of n: all of them, or with l
// its shard's part.
func nodes(l *capacity.Lockstep) func(n int) int {
	if l == nil {
		return func(n int) int { return n }
	}
	return l.Nodes
}

// capacityReport is the run's report with the capacity answer, the fleet's size at the end
// (this shard's, in a sharded run).
func (r *Run) capacityReport(steps capacity.Config, res capacity.Result, nodes int, shards *capacityShards) *report.Report {
	params := Parameters(r.cfg, r.o.Images, r.o.Report.ScrapeInterval)
	params.Nodes = nodes
	rec := r.rr.session.Record("", params, Versions(), r.tgt.Record())
	rep := report.Build(rec)
	rep.Capacity = res.Report(steps)
	if shards != nil {
		rep.Capacity.Shards = &report.CapacityShards{Shard: shards.lockstep.Shard.String(), Count: shards.lockstep.Shard.Count,
			Run: r.o.Shard.Run.Hash, Start: shards.lockstep.Start}
	}
	return rep
}
