package fleet

// STUB (branch workloads): the fleet's side of the profile's pod-fault ops, so that this branch
// builds and tests on its own; replaced by branch pods' fleet/pods.go at merge.

import (
	"errors"
	"fmt"

	"fakelet.dev/fakelet/agent"
)

// SetPodFault sets pf on the pods of the agents of node numbers nodes, as the fleet's other group ops
// reach agents.
func (f *Fleet) SetPodFault(nodes []int, pf agent.PodFault) error {
	var errs []error
	for _, i := range nodes {
		a := f.Agent(i)
		if a == nil {
			errs = append(errs, fmt.Errorf("pod fault on node %s: %w", NodeName(f.cfg.NamePrefix, i), errNoSuchNode))
			continue
		}
		a.SetPodFault(pf)
	}
	return errors.Join(errs...)
}
