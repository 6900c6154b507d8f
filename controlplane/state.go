package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Component names, also the names of their log files (DIR/<name>.log) and binaries.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
)

// componentOrder is the start order; stopping goes the other way.
var componentOrder = []string{Etcd, APIServer, ControllerManager, Scheduler}

// stateVersion changes when State changes incompatibly; a state of another version is treated as a
// stale control plane of unknown shape.
// 2: etcd takes client certificates; a control plane of version 1 (plain HTTP) is replaced, not reused.
// 3: kube-scheduler is a component, and the controller manager allocates node CIDRs.
const stateVersion = 3

// State is what DIR/state.json records about a running control plane: enough for another process
// (fakelet controlplane status/down, a later Up) to find, check and stop it.
type State struct {
	Version      int       `json:"version"`
	StartedAt    time.Time `json:"startedAt"`
	APIServerURL string    `json:"apiServerURL"`
	// ExtraArgs are the per-component arguments Up was given; a later Up with other ones does not
	// reuse this control plane.
	ExtraArgs map[string][]string `json:"extraArgs,omitempty"`
	// KeepData: Up was asked to keep etcd's data, so Down keeps it too.
	KeepData bool `json:"keepData,omitempty"`
	// UntilLastUser: started for runs (Options.UntilLastUser), so the last user's Leave stops it.
	UntilLastUser bool `json:"untilLastUser,omitempty"`
	// Components are in start order. Up writes the state after each start, so a crash in the
	// middle of Up leaves a state naming every process it had started.
	Components []ComponentState `json:"components"`
}

// ComponentState is one running component.
type ComponentState struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// Args is the full command line, Args[0] the binary. Nothing is signalled unless
	// /proc/<pid>/cmdline is exactly this, so a reused pid is never killed.
	Args []string `json:"args"`
	// ProcStartTime is the process's start time from /proc/<pid>/stat (clock ticks after boot);
	// it must match too, and it tells an exiting component (no cmdline left) from a new process.
	ProcStartTime uint64         `json:"procStartTime,omitempty"`
	Ports         map[string]int `json:"ports"`
	HealthURL     string         `json:"healthURL"`
	// MetricsURL is the component's Prometheus endpoint; see ControlPlane.MetricsClient.
	MetricsURL string    `json:"metricsURL"`
	Log        string    `json:"log"`
	StartedAt  time.Time `json:"startedAt"`
}

// Component returns the named component, if the state has it.
func (s *State) Component(name string) (ComponentState, bool) {
	i := slices.IndexFunc(s.Components, func(c ComponentState) bool { return c.Name == name })
	if i < 0 {
		return ComponentState{}, false
	}
	return s.Components[i], true
}

func (s *State) setComponent(c ComponentState) {
	i := slices.IndexFunc(s.Components, func(old ComponentState) bool { return old.Name == c.Name })
	if i < 0 {
		s.Components = append(s.Components, c)
		return
	}
	s.Components[i] = c
}

// complete tells whether every component was started.
func (s *State) complete() bool {
	for _, name := range componentOrder {
		if _, ok := s.Component(name); !ok {
			return false
		}
	}
	return true
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// errNoState means DIR holds no control plane state: none was started there, or it was stopped.
var errNoState = errors.New("no control plane state")

// readState reads DIR/state.json; errNoState if there is none.
func readState(dir string) (*State, error) {
	b, err := os.ReadFile(statePath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read control plane state in %s: %w", dir, errNoState)
	}
	if err != nil {
		return nil, fmt.Errorf("read control plane state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parse control plane state %s: %w", statePath(dir), err)
	}
	return &s, nil
}

// writeState replaces DIR/state.json atomically, so a reader never sees half a state.
func writeState(dir string, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode control plane state: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".state-*.json")
	if err != nil {
		return fmt.Errorf("write control plane state: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write control plane state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write control plane state: %w", err)
	}
	if err := os.Rename(tmp.Name(), statePath(dir)); err != nil {
		return fmt.Errorf("write control plane state: %w", err)
	}
	return nil
}

func removeState(dir string) error {
	if err := os.Remove(statePath(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove control plane state: %w", err)
	}
	return nil
}
