package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// StatusReport is what Status found in a control plane directory.
type StatusReport struct {
	Dir string
	// Recorded is false when dir holds no control plane state (never started, or stopped).
	Recorded     bool
	StartedAt    time.Time
	APIServerURL string
	Kubeconfig   string
	// Healthy: every component started, runs and answers its health check.
	Healthy bool
	// Users are the processes attached to it (Join, Up with UntilLastUser) that still run.
	Users         int
	UntilLastUser bool
	Components    []ComponentStatus
}

// ComponentStatus is one component of a StatusReport.
type ComponentStatus struct {
	Name  string
	PID   int
	Ports map[string]int
	// Process is "running", "gone" or "pid reused by another process".
	Process string
	// Health is "ok" or why the health check failed; empty if the process is not running.
	Health    string
	HealthURL string
	// RSS is the resident set size in bytes from /proc/<pid>/status; 0 if not running.
	RSS int64
	Log string
}

// Status reports on the control plane recorded in dir: each component's pid, ports, process, health
// and memory. It changes nothing.
func Status(ctx context.Context, dir string) (*StatusReport, error) {
	dir, err := checkedDir(dir)
	if err != nil {
		return nil, err
	}
	r := &StatusReport{Dir: dir, Kubeconfig: KubeconfigPath(dir)}
	st, err := readState(dir)
	if errors.Is(err, errNoState) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	r.Recorded, r.StartedAt, r.APIServerURL, r.UntilLastUser = true, st.StartedAt, st.APIServerURL, st.UntilLastUser
	live, err := users(dir, procfs{}, false)
	if err != nil {
		return nil, err
	}
	r.Users = len(live)
	check := healthChecker(dir)
	r.Healthy = assess(ctx, st, procfs{}, check).healthy
	for _, c := range st.Components {
		cs := ComponentStatus{Name: c.Name, PID: c.PID, Ports: c.Ports, HealthURL: c.HealthURL, Log: c.Log}
		s := inspect(procfs{}, c)
		cs.Process = s.String()
		if s == procOurs {
			cs.Health = "ok"
			if err := check(ctx, c); err != nil {
				cs.Health = err.Error()
			}
			if rss, err := (procfs{}).rss(c.PID); err == nil {
				cs.RSS = rss
			} else {
				cs.Health += fmt.Sprintf(" (no RSS: %v)", err)
			}
		}
		r.Components = append(r.Components, cs)
	}
	return r, nil
}
