package agent

import (
	"testing"
	"time"
)

// A v1.37 kubelet reports a pod's sandbox ready before its containers start (OnPodSandboxReady):
// between the Pending patch and the Running one, a patch of the PodReadyToStartContainers condition
// alone, still Pending, with no pod IP and the containers still being created.
func TestSandboxReadyReportedBeforeContainers(t *testing.T) {
	h, a := startKubelet(t, "10.244.3.0/24")
	pod := kubeletPod(t, h, "web-1", nil)
	h.take()
	a.ObservePod(pod)
	h.advance(6500 * time.Millisecond)
	_, patches := podCalls(h.take())
	if len(patches) != 3 {
		t.Fatalf("%d patches, want Pending, the sandbox ready, Running: %v", len(patches), patches)
	}
	st, _ := patches[1]["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	if len(conds) != 1 || st["phase"] != nil || st["podIP"] != nil || st["containerStatuses"] != nil {
		t.Fatalf("second patch %v, want the one condition, still Pending, no pod IP, the containers unchanged", patches[1])
	}
	c, _ := conds[0].(map[string]any)
	if c["type"] != "PodReadyToStartContainers" || c["status"] != "True" || c["reason"] != nil || c["message"] != nil {
		t.Errorf("condition %v, want PodReadyToStartContainers True", c)
	}
	if st, _ := patches[2]["status"].(map[string]any); st["phase"] != "Running" || st["podIP"] != "10.244.3.2" {
		t.Errorf("third patch %v, want Running at 10.244.3.2", patches[2])
	}
}
