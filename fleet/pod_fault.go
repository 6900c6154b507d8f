package fleet

import (
	"errors"
	"fmt"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// SetPodFault applies pf to the pods of the fleet's nodes numbered nodes (their containers crash,
// or fail their readiness: agent.PodFault), from now on; the zero PodFault clears it. A node the
// fleet does not have, or removed, is an error naming it; the others get the fault all the same.
func (f *Fleet) SetPodFault(nodes []int, pf agent.PodFault) error {
	if pf.ExitCode < 0 || pf.ExitCode > 255 {
		return fmt.Errorf("pod fault exit code must be between 0 and 255, got %d", pf.ExitCode)
	}
	var errs []error
	for _, i := range nodes {
		a := f.Agent(i)
		if a == nil {
			errs = append(errs, fmt.Errorf("set the pod fault of node %s: %w", fleetname.NodeName(f.cfg.NamePrefix, i), errNoSuchNode))
			continue
		}
		a.SetPodFault(pf)
	}
	return errors.Join(errs...)
}
