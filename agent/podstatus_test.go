package agent

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The agent reports a new pod Running and Ready as the kubelet does, with the pod's UID as the
// patch's precondition; a pod it already reported gets an empty patch (the UID alone), however much
// later, since what did not change keeps its times.
func TestPodStatusPatch(t *testing.T) {
	h := newHarness(t)
	a := h.agent("node-00007", 7)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "node-00007-3", Namespace: "default", UID: "pod-uid"},
		Spec:       corev1.PodSpec{NodeName: "node-00007", Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
	}
	now := t0.Add(1500 * time.Millisecond)
	st := a.podStatus(pod, now)
	if st.Phase != corev1.PodRunning || st.HostIP != a.InternalIP().String() || st.PodIP != "100.64.3.5" ||
		st.StartTime == nil || !st.StartTime.Time.Equal(now.Truncate(time.Second)) || st.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("status %+v: want Running on the node's IP, pod IP 100.64.3.5 (7 x 110 + 3 = 3 x 256 + 5), started now, QoS kept", st)
	}
	var types []corev1.PodConditionType
	for _, c := range st.Conditions {
		if c.Status != corev1.ConditionTrue {
			t.Errorf("condition %s is %s", c.Type, c.Status)
		}
		types = append(types, c.Type)
	}
	if len(types) != len(podConditions) {
		t.Errorf("conditions %v, want %v", types, podConditions)
	}
	if cs := st.ContainerStatuses; len(cs) != 1 || !cs[0].Ready || cs[0].State.Running == nil || cs[0].ContainerID == "" {
		t.Errorf("container statuses %+v, want one running and ready", cs)
	}

	patch, err := podStatusPatch(pod, st)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Metadata struct{ UID string } `json:"metadata"`
		Status   map[string]any       `json:"status"`
	}
	if err := json.Unmarshal(patch, &p); err != nil || p.Metadata.UID != "pod-uid" || p.Status["phase"] != "Running" {
		t.Errorf("patch %s: want the UID precondition and phase Running", patch)
	}

	reported := pod.DeepCopy()
	reported.Status = st
	again, err := podStatusPatch(reported, a.podStatus(reported, now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != `{"metadata":{"uid":"pod-uid"}}` {
		t.Errorf("patch of a pod already Running and Ready: %s, want the UID alone", again)
	}
	if !runningReady(reported) || runningReady(pod) {
		t.Errorf("runningReady: reported %v, new %v", runningReady(reported), runningReady(pod))
	}
}
