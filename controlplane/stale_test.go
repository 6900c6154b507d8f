package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// fakeProcs is a /proc of made-up pids.
type fakeProcs map[int]procInfo

func (f fakeProcs) process(pid int) (procInfo, error) {
	if p, ok := f[pid]; ok {
		return p, nil
	}
	return procInfo{}, fmt.Errorf("pid %d: %w", pid, fs.ErrNotExist)
}

// running is the procInfo of c's own process.
func running(c ComponentState) procInfo { return procInfo{startTime: c.ProcStartTime, cmdline: c.Args} }

func (f fakeProcs) rss(pid int) (int64, error) { return 1 << 20, nil }

func TestAssess(t *testing.T) {
	st := testState()
	etcd, apiserver, kcm, sched := st.Components[0], st.Components[1], st.Components[2], st.Components[3]
	allRunning := fakeProcs{101: running(etcd), 102: running(apiserver), 103: running(kcm), 104: running(sched)}
	withProc := func(pid int, p *procInfo) fakeProcs {
		f := fakeProcs{}
		for k, v := range allRunning {
			f[k] = v
		}
		if p == nil {
			delete(f, pid)
		} else {
			f[pid] = *p
		}
		return f
	}
	healthy := func(context.Context, ComponentState) error { return nil }
	tests := []struct {
		name          string
		state         func() *State
		procs         fakeProcs
		check         func(context.Context, ComponentState) error
		wantHealthy   bool
		wantSurvivors []string
		wantProblem   string
	}{
		{
			name: "all running and healthy", state: testState, procs: allRunning, check: healthy,
			wantHealthy: true, wantSurvivors: []string{Etcd, APIServer, ControllerManager, Scheduler},
		},
		{
			name: "apiserver killed", state: testState, procs: withProc(102, nil), check: healthy,
			wantSurvivors: []string{Etcd, ControllerManager, Scheduler}, wantProblem: "kube-apiserver (pid 102) gone",
		},
		{
			name: "all dead", state: testState, procs: fakeProcs{}, check: healthy,
			wantSurvivors: nil, wantProblem: "etcd (pid 101) gone",
		},
		{
			name: "apiserver pid reused by another program", state: testState,
			procs: withProc(102, &procInfo{startTime: 5000, cmdline: []string{"/usr/bin/vim", "notes.txt"}}), check: healthy,
			wantSurvivors: []string{Etcd, ControllerManager, Scheduler}, wantProblem: "pid reused",
		},
		{
			name: "same binary, other arguments: another control plane's", state: testState,
			procs: withProc(101, &procInfo{startTime: etcd.ProcStartTime, cmdline: []string{"/bin/etcd", "--name=other"}}), check: healthy,
			wantSurvivors: []string{APIServer, ControllerManager, Scheduler}, wantProblem: "etcd (pid 101) pid reused",
		},
		{
			name: "running but unhealthy", state: testState, procs: allRunning,
			check: func(_ context.Context, c ComponentState) error {
				if c.Name == ControllerManager {
					return errors.New("connection refused")
				}
				return nil
			},
			wantSurvivors: []string{Etcd, APIServer, ControllerManager, Scheduler}, wantProblem: "kube-controller-manager (pid 103) unhealthy: connection refused",
		},
		{
			name: "Up crashed after etcd", procs: allRunning, check: healthy,
			state: func() *State {
				s := testState()
				s.Components = s.Components[:1]
				return s
			},
			wantSurvivors: []string{Etcd}, wantProblem: "kube-apiserver was never started",
		},
		{
			name: "state of another version", procs: allRunning, check: healthy,
			state: func() *State {
				s := testState()
				s.Version = stateVersion + 1
				return s
			},
			wantSurvivors: []string{Etcd, APIServer, ControllerManager, Scheduler}, wantProblem: "state version",
		},
		{
			// A control plane of fakelet from before the scheduler: replaced, not reused.
			name: "state of version 2, before kube-scheduler", procs: allRunning, check: healthy,
			state: func() *State {
				s := testState()
				s.Version = 2
				s.Components = s.Components[:3]
				return s
			},
			wantSurvivors: []string{Etcd, APIServer, ControllerManager}, wantProblem: "state version 2, want 3; kube-scheduler was never started",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := assess(context.Background(), tt.state(), tt.procs, tt.check)
			if a.healthy != tt.wantHealthy {
				t.Errorf("healthy = %v, want %v (%s)", a.healthy, tt.wantHealthy, a)
			}
			var survivors []string
			for _, c := range a.survivors {
				survivors = append(survivors, c.Name)
			}
			if !slices.Equal(survivors, tt.wantSurvivors) {
				t.Errorf("survivors = %v, want %v", survivors, tt.wantSurvivors)
			}
			if !strings.Contains(a.String(), tt.wantProblem) {
				t.Errorf("problems %q do not mention %q", a, tt.wantProblem)
			}
		})
	}
}

func TestInspect(t *testing.T) {
	args := []string{"/bin/etcd", "--data-dir=/a"}
	c := ComponentState{Name: Etcd, PID: 7, Args: args, ProcStartTime: 1234}
	legacy := c // recorded without a start time: the command line alone decides
	legacy.ProcStartTime = 0
	tests := []struct {
		name     string
		recorded ComponentState
		procs    fakeProcs
		want     procStatus
	}{
		{"ours", c, fakeProcs{7: {1234, args}}, procOurs},
		{"gone", c, fakeProcs{}, procGone},
		{"exiting: memory released, files not yet", c, fakeProcs{7: {1234, nil}}, procOurs},
		{"reused by another program", c, fakeProcs{7: {9999, []string{"/bin/sh"}}}, procForeign},
		{"reused by the same command line, started later", c, fakeProcs{7: {9999, args}}, procForeign},
		{"reused by a kernel thread", c, fakeProcs{7: {9999, nil}}, procForeign},
		{"same start, one argument more", c, fakeProcs{7: {1234, append(args[:2:2], "--x")}}, procForeign},
		{"never started", ComponentState{Name: Etcd, Args: args}, fakeProcs{0: {1234, args}}, procGone},
		{"no start time recorded, ours", legacy, fakeProcs{7: {1234, args}}, procOurs},
		{"no start time recorded, reused", legacy, fakeProcs{7: {1234, []string{"/bin/sh"}}}, procForeign},
		{"no start time recorded, no command line", legacy, fakeProcs{7: {1234, nil}}, procForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := inspect(tt.procs, tt.recorded); got != tt.want {
				t.Errorf("inspect = %v, want %v", got, tt.want)
			}
		})
	}
}
