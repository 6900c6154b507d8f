package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// afterRun is what `fakelet run` does once a run has ended well (--after-run).
type afterRun string

const (
	// afterRunExit exits, as a command does.
	afterRunExit afterRun = "exit"
	// afterRunWait stays up until a signal, serving the metrics and the report. In a StatefulSet a
	// process that exits is restarted, and with --start-at auto the restarted shards would agree on
	// a new start and play the profile again over the report (docs/distributed.md).
	afterRunWait afterRun = "wait"
)

func addAfterRunFlag(f *pflag.FlagSet, a *afterRun) {
	*a = afterRunExit
	f.Var(a, "after-run", "once the run has ended and its report is written: exit, or wait for SIGTERM or Ctrl-C, "+
		"serving --metrics-addr's /metrics and /report/ meanwhile (as deploy/kubernetes does); a failed run exits either way")
}

func (a *afterRun) String() string { return string(*a) }

func (a *afterRun) Type() string { return "exit|wait" }

func (a *afterRun) Set(s string) error {
	switch v := afterRun(s); v {
	case afterRunExit, afterRunWait:
		*a = v
		return nil
	}
	return errors.New("want exit or wait")
}

// hold returns at once unless --after-run=wait, and then when ctx ends: the caller's signal context,
// so that SIGTERM or Ctrl-C ends the process promptly. served says what stays available meanwhile.
func (a afterRun) hold(ctx context.Context, log io.Writer, served string) {
	if a != afterRunWait {
		return
	}
	fmt.Fprintf(log, "after-run: the run is over; waiting for SIGTERM or Ctrl-C (--after-run=wait), doing nothing but serve %s, "+
		"so that Prometheus scrapes the final counters and a restart does not play the run again\n", served)
	<-ctx.Done()
}
