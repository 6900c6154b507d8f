package run

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	u.RSS = rssOf("/proc/self/status")
	return u
}

// rssOf reads VmRSS from a /proc/<pid>/status file.
func rssOf(statusFile string) int64 {
	f, err := os.Open(statusFile)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
