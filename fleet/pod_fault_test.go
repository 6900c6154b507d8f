package fleet

import (
	"strings"
	"testing"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// SetPodFault reaches the agents of the nodes named by index, and names the ones it cannot.
func TestSetPodFault(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 2})
	crash := agent.PodFault{Crash: true, ExitCode: 2}
	err := tf.SetPodFault([]int{1, 7}, crash)
	if err == nil || !strings.Contains(err.Error(), fleetname.NodeName(fleetname.DefaultNamePrefix, 7)) {
		t.Errorf("error %v, want node 7 named", err)
	}
	if got := tf.Agent(1).PodFault(); got != crash {
		t.Errorf("node 1's fault %+v, want %+v", got, crash)
	}
	if got := tf.Agent(0).PodFault(); got != (agent.PodFault{}) {
		t.Errorf("node 0's fault %+v, want none", got)
	}
	if err := tf.SetPodFault([]int{0}, agent.PodFault{Crash: true, ExitCode: 300}); err == nil {
		t.Errorf("exit code 300 accepted")
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
}
