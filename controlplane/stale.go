package controlplane

import (
	"context"
	"fmt"
	"strings"
)

// assessment is what a recorded control plane turned out to be.
type assessment struct {
	// healthy: every component was started, still runs and answers its health check.
	healthy bool
	// survivors are the components still running the command line that was started: the ones to
	// stop before starting afresh. A pid now running another program is not among them.
	survivors []ComponentState
	// problems say, one per component, why the control plane is not healthy.
	problems []string
}

func (a assessment) String() string {
	if a.healthy {
		return "healthy"
	}
	return strings.Join(a.problems, "; ")
}

// assess checks a recorded control plane: each process in /proc (through r), then each live one's
// health endpoint (through check). It stops nothing.
func assess(ctx context.Context, st *State, r procReader, check func(context.Context, ComponentState) error) assessment {
	var a assessment
	if st.Version != stateVersion {
		a.problems = append(a.problems, fmt.Sprintf("state version %d, want %d", st.Version, stateVersion))
	}
	for _, name := range componentOrder {
		if _, ok := st.Component(name); !ok {
			a.problems = append(a.problems, name+" was never started")
		}
	}
	for _, c := range st.Components {
		switch s := inspect(r, c); {
		case isOptional(c.Name):
			// Its health is its own: a dead Prometheus does not make the control plane stale.
			if s == procOurs {
				a.survivors = append(a.survivors, c)
			}
		case s == procOurs:
			a.survivors = append(a.survivors, c)
			if err := check(ctx, c); err != nil {
				a.problems = append(a.problems, fmt.Sprintf("%s (pid %d) unhealthy: %v", c.Name, c.PID, err))
			}
		default:
			a.problems = append(a.problems, fmt.Sprintf("%s (pid %d) %s", c.Name, c.PID, s))
		}
	}
	a.healthy = len(a.problems) == 0
	return a
}
