package bench

import (
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// placement is where a bench's processes run: each fleet (and a peer) on fleet, everything else it
// starts (the target) on target. Both empty: anywhere.
type placement struct{ fleet, target unix.CPUSet }

// placeFleet makes the placement that keeps cpus for the fleets and gives the target the other CPUs
// this process may use. Beside a co-located server, a fleet is preempted by the server's threads
// and runs its own work slower (docs/performance.md, "What the fidelity gap is"); apart, it costs
// what it would on a machine of its own.
func placeFleet(cpus []int) (placement, error) {
	var p placement
	if len(cpus) == 0 {
		return p, nil
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return p, fmt.Errorf("the CPUs this process may use: %w", err)
	}
	p.target = allowed
	for _, c := range cpus {
		if c < 0 || !allowed.IsSet(c) {
			return p, fmt.Errorf("fleet CPU %d: not one this process may use", c)
		}
		p.fleet.Set(c)
		p.target.Clear(c)
	}
	if p.target.Count() == 0 {
		return p, fmt.Errorf("fleet CPUs %v leave no CPU for the target", slices.Sorted(slices.Values(cpus)))
	}
	return p, nil
}

// onCPUs calls start on a thread that may run only on set, so that the processes start begins run
// only on set: a Linux child inherits the affinity of the thread that forked it, and its threads
// inherit it in turn. start must begin its processes on the calling goroutine. An empty set calls
// start as is.
func onCPUs(set unix.CPUSet, start func() error) error {
	if set.Count() == 0 {
		return start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return fmt.Errorf("this thread's CPUs: %w", err)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("run on CPUs %s: %w", cpuList(set), err)
	}
	err := start()
	if rerr := unix.SchedSetaffinity(0, &was); rerr != nil && err == nil {
		err = fmt.Errorf("restore this thread's CPUs: %w", rerr)
	}
	return err
}

// cpuList spells set as the CPUs' numbers.
func cpuList(set unix.CPUSet) string {
	var cpus []int
	for c := range 1024 { // all a CPUSet holds
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return fmt.Sprint(cpus)
}
