package bench

import (
	"fmt"
	"strings"
	"time"
)

// ParseWindows reads --windows: comma-separated NAME=DURATION for any of startup, steady, pods and
// restart; the others keep their value in def.
func ParseWindows(s string, def Windows) (Windows, error) {
	w := def
	if strings.TrimSpace(s) == "" {
		return w, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return w, fmt.Errorf("%q: want NAME=DURATION, NAME one of %s", part, strings.Join(WindowNames, ", "))
		}
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return w, fmt.Errorf("%s=%s: want a positive duration such as 90s or 10m", name, value)
		}
		if seen[name] {
			return w, fmt.Errorf("window %s given twice", name)
		}
		seen[name] = true
		switch name {
		case WindowStartup:
			w.Startup = d
		case WindowSteady:
			w.Steady = d
		case WindowPods:
			w.Pods = d
		case WindowRestart:
			w.Restart = d
		default:
			return w, fmt.Errorf("unknown window %q (windows: %s)", name, strings.Join(WindowNames, ", "))
		}
	}
	return w, nil
}

// String is what ParseWindows reads.
func (w Windows) String() string {
	return fmt.Sprintf("%s=%v,%s=%v,%s=%v,%s=%v", WindowStartup, w.Startup, WindowSteady, w.Steady, WindowPods, w.Pods, WindowRestart, w.Restart)
}
