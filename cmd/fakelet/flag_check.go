package main

import (
	"errors"
	"fmt"
	"strconv"

	"fakelet.dev/fakelet/fleet"
	"fakelet.dev/fakelet/fleetname"
)

// fleetFlags names the flag that sets each numeric field of fleet.Config, and what an error about it
// should add.
var fleetFlags = map[string]struct{ name, hint string }{
	"Nodes":       {name: "--nodes"},
	"Zones":       {name: "--zones"},
	"Connections": {name: "--connections", hint: " (0 picks one per 1000 nodes)"},
	"RegisterQPS": {name: "--register-qps"},
	"CleanupQPS":  {name: "--cleanup-qps"},
	"Coalesce":    {name: "--coalesce"},

	"PodTiming.ImagePull":   {name: "--pod-image-pull-delay"},
	"PodTiming.Start":       {name: "--pod-start-delay"},
	"PodTiming.Ready":       {name: "--pod-ready-delay"},
	"PodTiming.RunDuration": {name: "--pod-run-duration"},
}

// checkFleetFlags checks what fleet.Config.Resolve cannot, since it takes a zero --register-qps or
// --cleanup-qps, and an empty --name-prefix or --fleet, as "use the default": so that an explicit
// value is never replaced by a default. The ranges are Resolve's (resolveFlags).
func (rf *runFlags) checkFleetFlags() error {
	c := rf.fleet
	switch {
	case c.Nodes > fleetname.MaxNodes:
		// Named with where the count came from: the flag, or a profile's spec.nodes.
		return fmt.Errorf("%s: more than the largest fleet fakelet runs (%d nodes)", rf.nodesSource(c), fleetname.MaxNodes)
	case c.RegisterQPS == 0:
		return errors.New("--register-qps must be positive and finite, got 0")
	case c.CleanupQPS == 0:
		return fmt.Errorf("--cleanup-qps %w", fleet.CheckCleanupQPS(0))
	}
	if err := checkName("--name-prefix", c.NamePrefix, fleetname.CheckNamePrefix); err != nil {
		return err
	}
	return checkName("--fleet", c.Fleet, fleetname.CheckFleet)
}

// resolveFlags resolves the fleet the flags, the profile and the shard made, once, naming the flag
// of a numeric field out of range.
func resolveFlags(cfg fleet.Config) (fleet.Resolved, error) {
	r, err := cfg.Resolve()
	var fe *fleet.FieldError
	if errors.As(err, &fe) {
		if flag, ok := fleetFlags[fe.Field]; ok {
			return r, fmt.Errorf("%s %s%s", flag.name, fe.Problem, flag.hint)
		}
	}
	return r, err
}

// connectionFlag reads --connections into the fleet's connection mode: shared or per-node, or a
// number of shared connection sets (0 picks one per 1000 nodes), as the flag took before per-node
// connections existed.
func (rf *runFlags) connectionFlag() error {
	rf.fleet.ConnectionMode, rf.fleet.Connections = fleet.ConnectionsShared, 0
	if mode, err := fleet.ParseConnectionMode(rf.connections); err == nil {
		rf.fleet.ConnectionMode = mode
		return nil
	}
	n, err := strconv.Atoi(rf.connections)
	if err != nil {
		return fmt.Errorf("--connections %q: want %s, %s or a number of shared connections", rf.connections, fleet.ConnectionsShared, fleet.ConnectionsPerNode)
	}
	rf.fleet.Connections = n // its range is fleet.Config.Resolve's
	return nil
}

// checkName checks a name as fleet.Config.Resolve does, and refuses it empty: an empty value from
// an unset shell variable must not select the default fleet, whose Nodes a run adopts and a cleanup
// deletes.
func checkName(flag, name string, check func(string) error) error {
	if name == "" {
		return errors.New(flag + " must not be empty")
	}
	if err := check(name); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}
