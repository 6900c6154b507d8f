package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestUsersOfGoneProcessesArePruned: a user whose process is gone, or whose pid now runs another
// process (another start time), or whose file is not a user's, is removed; live ones stay.
func TestUsersOfGoneProcessesArePruned(t *testing.T) {
	dir := privateTempDir(t)
	first, err := addUser(dir, procfs{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := addUser(dir, procfs{})
	if err != nil {
		t.Fatal(err)
	}
	self, err := procfs{}.process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"999999999-5-1", fmt.Sprintf("%d-%d-1", os.Getpid(), self.startTime+1), "garbage"} {
		if err := os.WriteFile(filepath.Join(usersDir(dir), name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	live, err := liveUsers(dir, procfs{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(live)
	want := []string{first, second}
	slices.Sort(want)
	if !slices.Equal(live, want) {
		t.Errorf("live users %q, want %q", live, want)
	}
	if entries, _ := os.ReadDir(usersDir(dir)); len(entries) != 2 {
		t.Errorf("%d user files left, want the 2 live ones", len(entries))
	}
}

// TestLeaveStopsOnlyWithTheLastUser: of two users of a control plane started for runs, the first to
// leave leaves it up and says one user is left; the second stops it (its state is removed). One
// started by `fakelet controlplane up` is left up by its last user.
func TestLeaveStopsOnlyWithTheLastUser(t *testing.T) {
	ctx := context.Background()
	for _, untilLastUser := range []bool{true, false} {
		t.Run(fmt.Sprint("UntilLastUser=", untilLastUser), func(t *testing.T) {
			dir := privateTempDir(t)
			st := testState()
			st.UntilLastUser = untilLastUser
			for i := range st.Components {
				st.Components[i].PID = 0 // gone: nothing to signal
			}
			if err := writeState(dir, st); err != nil {
				t.Fatal(err)
			}
			join := func() *ControlPlane {
				cp := &ControlPlane{Dir: dir, state: *st}
				var err error
				if cp.userFile, err = addUser(dir, procfs{}); err != nil {
					t.Fatal(err)
				}
				return cp
			}
			a, b := join(), join()
			left, err := a.Leave(ctx)
			if err != nil || left != (Left{Users: 1, Kept: !untilLastUser}) {
				t.Fatalf("the first user's Leave: %+v, %v; want 1 user left and nothing stopped", left, err)
			}
			if _, err := readState(dir); err != nil {
				t.Fatalf("the control plane's state after the first user left: %v", err)
			}
			left, err = b.Leave(ctx)
			if err != nil || left != (Left{Stopped: untilLastUser, Kept: !untilLastUser}) {
				t.Fatalf("the last user's Leave: %+v, %v", left, err)
			}
			if _, err := readState(dir); errors.Is(err, errNoState) != untilLastUser {
				t.Errorf("state after the last user left: %v; want it removed only if started for runs", err)
			}
			if _, err := a.Leave(ctx); err == nil {
				t.Error("a second Leave of the same user gave no error")
			}
		})
	}
}
