package agent

// STUB (branch workloads): the declarations the profile's pod-fault ops call, so that this branch
// builds and tests on its own. The pod runtime (branch pods) holds the real PodFault and SetPodFault;
// this file is replaced by theirs at merge.

// PodFault is what the containers of a node's pods do wrong: exit with ExitCode (Crash), or fail
// their readiness while Running (Unready). The zero PodFault clears both.
type PodFault struct {
	Crash    bool
	ExitCode int32
	Unready  bool
}

// SetPodFault sets the fault of the agent's pods. STUB: does nothing.
func (a *Agent) SetPodFault(f PodFault) {}
