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

// fakeProcs is a /proc of made-up pids: pid -> command line.
type fakeProcs map[int][]string

func (f fakeProcs) cmdline(pid int) ([]string, error) {
	if c, ok := f[pid]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("pid %d: %w", pid, fs.ErrNotExist)
}

func (f fakeProcs) rss(pid int) (int64, error) { return 1 << 20, nil }

func TestAssess(t *testing.T) {
	st := testState()
	etcd, apiserver, kcm := st.Components[0], st.Components[1], st.Components[2]
	allRunning := fakeProcs{101: etcd.Args, 102: apiserver.Args, 103: kcm.Args}
	withProc := func(pid int, cmdline []string) fakeProcs {
		f := fakeProcs{}
		for k, v := range allRunning {
			f[k] = v
		}
		if cmdline == nil {
			delete(f, pid)
		} else {
			f[pid] = cmdline
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
			wantHealthy: true, wantSurvivors: []string{Etcd, APIServer, ControllerManager},
		},
		{
			name: "apiserver killed", state: testState, procs: withProc(102, nil), check: healthy,
			wantSurvivors: []string{Etcd, ControllerManager}, wantProblem: "kube-apiserver (pid 102) gone",
		},
		{
			name: "all dead", state: testState, procs: fakeProcs{}, check: healthy,
			wantSurvivors: nil, wantProblem: "etcd (pid 101) gone",
		},
		{
			name: "apiserver pid reused by another program", state: testState,
			procs: withProc(102, []string{"/usr/bin/vim", "notes.txt"}), check: healthy,
			wantSurvivors: []string{Etcd, ControllerManager}, wantProblem: "pid reused",
		},
		{
			name: "same binary, other arguments: another control plane's", state: testState,
			procs: withProc(101, []string{"/bin/etcd", "--name=other"}), check: healthy,
			wantSurvivors: []string{APIServer, ControllerManager}, wantProblem: "etcd (pid 101) pid reused",
		},
		{
			name: "running but unhealthy", state: testState, procs: allRunning,
			check: func(_ context.Context, c ComponentState) error {
				if c.Name == ControllerManager {
					return errors.New("connection refused")
				}
				return nil
			},
			wantSurvivors: []string{Etcd, APIServer, ControllerManager}, wantProblem: "kube-controller-manager (pid 103) unhealthy: connection refused",
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
			wantSurvivors: []string{Etcd, APIServer, ControllerManager}, wantProblem: "state version",
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
	c := ComponentState{Name: Etcd, PID: 7, Args: []string{"/bin/etcd", "--data-dir=/a"}}
	tests := []struct {
		name  string
		procs fakeProcs
		pid   int
		want  procStatus
	}{
		{"ours", fakeProcs{7: {"/bin/etcd", "--data-dir=/a"}}, 7, procOurs},
		{"gone", fakeProcs{}, 7, procGone},
		{"reused", fakeProcs{7: {"/bin/sh"}}, 7, procForeign},
		{"one argument more", fakeProcs{7: {"/bin/etcd", "--data-dir=/a", "--x"}}, 7, procForeign},
		{"never started", fakeProcs{0: {"/bin/etcd", "--data-dir=/a"}}, 0, procGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := c
			c.PID = tt.pid
			if got := inspect(tt.procs, c); got != tt.want {
				t.Errorf("inspect = %v, want %v", got, tt.want)
			}
		})
	}
}
