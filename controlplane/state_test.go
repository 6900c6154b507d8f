package controlplane

import (
	"errors"
	"os"
	"reflect"
	"testing"
	"time"
)

func testState() *State {
	return &State{
		Version:      stateVersion,
		StartedAt:    time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC),
		APIServerURL: "https://127.0.0.1:40001",
		ExtraArgs:    map[string][]string{APIServer: {"--max-requests-inflight=800"}},
		Components: []ComponentState{
			{Name: Etcd, PID: 101, ProcStartTime: 1001, Args: []string{"/bin/etcd", "--name=fakelet"}, Ports: map[string]int{"client": 40002}},
			{Name: APIServer, PID: 102, ProcStartTime: 1002, Args: []string{"/bin/kube-apiserver"}, Ports: map[string]int{"secure": 40001}},
			{Name: ControllerManager, PID: 103, ProcStartTime: 1003, Args: []string{"/bin/kube-controller-manager"}, Ports: map[string]int{"secure": 40003}},
			{Name: Scheduler, PID: 104, ProcStartTime: 1004, Args: []string{"/bin/kube-scheduler"}, Ports: map[string]int{"secure": 40005}},
		},
	}
}

func TestStateRoundTrip(t *testing.T) {
	dir := privateTempDir(t)
	want := testState()
	if err := writeState(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := readState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	// Only state.json is left: the temporary file was renamed.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir holds %d entries, want only state.json", len(entries))
	}
	if err := removeState(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := readState(dir); !errors.Is(err, errNoState) {
		t.Errorf("after removeState, readState error = %v, want errNoState", err)
	}
	if err := removeState(dir); err != nil {
		t.Errorf("removing an absent state: %v", err)
	}
}

func TestReadStateCorrupt(t *testing.T) {
	dir := privateTempDir(t)
	if err := os.WriteFile(statePath(dir), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readState(dir)
	if err == nil || errors.Is(err, errNoState) {
		t.Errorf("readState of a corrupt file: error = %v, want a parse error", err)
	}
}

func TestStateComponents(t *testing.T) {
	st := &State{}
	if st.complete() {
		t.Error("an empty state is complete")
	}
	for _, c := range testState().Components {
		st.setComponent(c)
	}
	if !st.complete() {
		t.Error("a state with all four components is not complete")
	}
	st.setComponent(ComponentState{Name: APIServer, PID: 999})
	if len(st.Components) != 4 {
		t.Fatalf("setComponent of a known name appended: %d components", len(st.Components))
	}
	if c, ok := st.Component(APIServer); !ok || c.PID != 999 {
		t.Errorf("Component(%s) = %+v, %v; want the replaced one", APIServer, c, ok)
	}
	if _, ok := st.Component("kube-proxy"); ok {
		t.Error("Component of an unknown name found something")
	}
}
