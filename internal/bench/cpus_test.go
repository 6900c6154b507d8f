package bench

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func allowedCPUs(t *testing.T) []int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for c := range 1024 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// A process started for the fleet runs on the fleet's CPUs only, one started for the target on the
// others, and one started after them wherever this process may run.
func TestPlacementReachesTheProcessesStarted(t *testing.T) {
	cpus := allowedCPUs(t)
	if len(cpus) < 2 {
		t.Skipf("needs two CPUs; this process may use %v", cpus)
	}
	at, err := placeFleet(cpus[:1])
	if err != nil {
		t.Fatal(err)
	}
	allowedList := func(set unix.CPUSet) string {
		t.Helper()
		cmd := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status")
		var out strings.Builder
		cmd.Stdout = &out
		if err := onCPUs(set, cmd.Start); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(strings.TrimPrefix(out.String(), "Cpus_allowed_list:"))
	}
	if got, want := allowedList(at.fleet), cpuRanges(cpus[:1]); got != want {
		t.Errorf("the fleet's process may run on %s, want %s", got, want)
	}
	if got, want := allowedList(at.target), cpuRanges(cpus[1:]); got != want {
		t.Errorf("the target's process may run on %s, want %s", got, want)
	}
	if got, want := allowedList(unix.CPUSet{}), cpuRanges(cpus); got != want {
		t.Errorf("a process started afterwards may run on %s, want %s", got, want)
	}
}

// cpuRanges spells cpus as /proc's Cpus_allowed_list does: 0-3,5.
func cpuRanges(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func TestPlaceFleetRefusesWhatCannotBeKept(t *testing.T) {
	cpus := allowedCPUs(t)
	for _, tc := range []struct {
		cpus []int
		want string
	}{
		{cpus, "leave no CPU for the target"},
		{[]int{-1}, "fleet CPU -1: not one this process may use"},
		{[]int{1024}, "fleet CPU 1024: not one this process may use"},
	} {
		if _, err := placeFleet(tc.cpus); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("placeFleet(%v) = %v, want an error saying %q", tc.cpus, err, tc.want)
		}
	}
	if at, err := placeFleet(nil); err != nil || at.fleet.Count() != 0 || at.target.Count() != 0 {
		t.Errorf("placeFleet(nil) = %v, %v; want no placement", at, err)
	}
}
