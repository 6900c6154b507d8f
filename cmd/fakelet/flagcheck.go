package main

import (
	"errors"
	"fmt"
	"time"

	"fakelet.dev/fakelet/fleet"
)

// checkFleetFlags checks the flags that fill rf.fleet before defaults apply, so that each error names
// its flag and an explicit value is never replaced by a default: fleet.Config treats a zero
// --register-qps, and an empty --name-prefix or --fleet, as "use the default".
func (rf *runFlags) checkFleetFlags() error {
	c := rf.fleet
	switch {
	case c.Nodes <= 0:
		return fmt.Errorf("--nodes must be positive, got %d", c.Nodes)
	case c.Nodes > fleet.MaxNodes:
		return fmt.Errorf("%s: more than the largest fleet fakelet runs (%d nodes)", rf.nodesSource(c), fleet.MaxNodes)
	case c.Zones < 0:
		return fmt.Errorf("--zones must not be negative, got %d", c.Zones)
	case c.Connections < 0:
		return fmt.Errorf("--connections must not be negative, got %d (0 picks one per 1000 nodes)", c.Connections)
	case !(c.RegisterQPS > 0) || !finite(c.RegisterQPS):
		return fmt.Errorf("--register-qps must be positive and finite, got %v", c.RegisterQPS)
	case !(c.CleanupQPS > 0) || !finite(c.CleanupQPS):
		return fmt.Errorf("--cleanup-qps must be positive and finite, got %v", c.CleanupQPS)
	case c.Coalesce < 0 || c.Coalesce > time.Second:
		return fmt.Errorf("--coalesce must be between 0 and 1s, got %v", c.Coalesce)
	}
	if err := checkName("--name-prefix", c.NamePrefix, fleet.CheckNamePrefix); err != nil {
		return err
	}
	return checkName("--fleet", c.Fleet, fleet.CheckFleetName)
}

// checkName checks a name as fleet.Config.Validate does, and refuses it empty: an empty value from
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
