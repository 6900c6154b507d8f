package controlplane

import (
	"fmt"
	"strings"
	"time"
)

// NodeMonitorGracePeriod is the controller manager's --node-monitor-grace-period as it was started
// (the last one on its command line wins, as with any flag), or false if it has none.
func (cp *ControlPlane) NodeMonitorGracePeriod() (time.Duration, bool, error) {
	for _, c := range cp.state.Components {
		if c.Name != ControllerManager {
			continue
		}
		return lastDurationFlag(c.Args, "--node-monitor-grace-period")
	}
	return 0, false, nil
}

// lastDurationFlag is the value of the last --name=VALUE or --name VALUE in args.
func lastDurationFlag(args []string, name string) (time.Duration, bool, error) {
	value, found := "", false
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, name+"="):
			value, found = strings.TrimPrefix(a, name+"="), true
		case a == name && i+1 < len(args):
			value, found = args[i+1], true
		}
	}
	if !found {
		return 0, false, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, false, fmt.Errorf("%s %q: %w", name, value, err)
	}
	return d, true, nil
}
