package run

import (
	"syscall"
	"time"

	"fakelet.dev/fakelet/controlplane"
)

// processUsage is this process's CPU time and memory.
type processUsage struct {
	CPU    time.Duration // user + system
	RSS    int64         // bytes, now
	MaxRSS int64         // bytes, peak
}

func selfUsage() processUsage {
	var ru syscall.Rusage
	var u processUsage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		u.MaxRSS = ru.Maxrss * 1024
	}
	u.RSS, _ = controlplane.ReadKiB("/proc/self/status", "VmRSS")
	return u
}
