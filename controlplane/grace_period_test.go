package controlplane

import (
	"testing"
	"time"
)

func TestNodeMonitorGracePeriodIsTheLastOnTheCommandLine(t *testing.T) {
	cp := &ControlPlane{state: State{Components: []ComponentState{
		{Name: APIServer, Args: []string{"kube-apiserver", "--node-monitor-grace-period=1s"}},
		{Name: ControllerManager, Args: []string{"kube-controller-manager", "--node-monitor-grace-period=50s", "--node-monitor-grace-period", "20s"}},
	}}}
	d, ok, err := cp.NodeMonitorGracePeriod()
	if err != nil || !ok || d != 20*time.Second {
		t.Errorf("got %v %v %v, want the extra argument's 20s", d, ok, err)
	}
	cp.state.Components[1].Args = []string{"kube-controller-manager"}
	if _, ok, err := cp.NodeMonitorGracePeriod(); ok || err != nil {
		t.Errorf("found one in a command line without: %v %v", ok, err)
	}
	cp.state.Components[1].Args = []string{"kube-controller-manager", "--node-monitor-grace-period=soon"}
	if _, _, err := cp.NodeMonitorGracePeriod(); err == nil {
		t.Error("no error for a value that is no duration")
	}
}
