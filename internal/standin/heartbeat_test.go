package standin

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/agent"
)

// TestHeartbeatPatchesAnswerAsTheStrategicMergeDoes: every node status patch, the kubelet's
// heartbeat that skips the strategic merge and the others that take it, answers what the strategic
// merge answers, and the Node it leaves is the same.
func TestHeartbeatPatchesAnswerAsTheStrategicMergeDoes(t *testing.T) {
	const uid = "d8994ab0-1748-47da-9576-1bf2ba53d349"
	beat := func(hb string) string {
		return `{"metadata":{"uid":"` + uid + `"},"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],` +
			`"conditions":[{"lastHeartbeatTime":"` + hb + `","type":"MemoryPressure"},{"lastHeartbeatTime":"` + hb + `","type":"DiskPressure"},{"lastHeartbeatTime":"` + hb + `","type":"PIDPressure"},{"lastHeartbeatTime":"` + hb + `","type":"Ready"}]}}`
	}
	short := map[string]string{
		"the kubelet's heartbeat": beat("2026-12-04T10:05:00Z"),
		"in another zone":         beat("2026-12-04T12:05:00+02:00"),
		"one condition":           `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[{"type":"Ready","lastHeartbeatTime":"2026-12-04T10:06:00Z"}]}}`,
		"the uid alone":           `{"metadata":{"uid":"` + uid + `"}}`,
		"another uid":             strings.Replace(beat("2026-12-04T10:05:00Z"), uid, "another", 1),
		"an empty uid":            `{"metadata":{"uid":""}}`,
		"nothing":                 `{}`,
		"with spaces and escapes": " {\"status\" : {\"conditions\":[{\"type\":\"Ready\",\"lastHeartbeatTime\":\"2026-12-04T10:07:00Z\"}], \"$setElementOrder/conditions\":[{\"type\":\"MemoryPressure\"},{\"type\":\"DiskPressure\"},{\"type\":\"PIDPressure\"},{\"type\":\"Re\\u0061dy\"}]}}\n",
	}
	merged := map[string]string{
		"a heartbeat that is not a time":   strings.ReplaceAll(beat("2026-12-04T10:05:00Z"), "2026-12-04T10:05:00Z", "yesterday"),
		"a null uid":                       `{"metadata":{"uid":null}}`,
		"a uid in capitals":                `{"metadata":{"UID":"` + uid + `"}}`,
		"a changed status":                 `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":"2026-12-04T10:05:00Z","status":"False","type":"Ready"}]}}`,
		"another order":                    `{"status":{"$setElementOrder/conditions":[{"type":"Ready"},{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"}],"conditions":[{"lastHeartbeatTime":"2026-12-04T10:05:00Z","type":"Ready"}]}}`,
		"a new condition":                  `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"},{"type":"X"}],"conditions":[{"lastHeartbeatTime":"2026-12-04T10:05:00Z","type":"X"}]}}`,
		"a condition twice":                `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":"2026-12-04T10:05:00Z","type":"Ready"},{"lastHeartbeatTime":"2026-12-04T10:06:00Z","type":"Ready"}]}}`,
		"no order":                         `{"status":{"conditions":[{"lastHeartbeatTime":"2026-12-04T10:05:00Z","type":"Ready"}]}}`,
		"no conditions":                    `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[]}}`,
		"a number for a time":              `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":5,"type":"Ready"}]}}`,
		"a null time":                      `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":null,"type":"Ready"}]}}`,
		"a phase":                          `{"status":{"phase":"Running"}}`,
		"metadata twice":                   `{"metadata":{"uid":"` + uid + `"},"metadata":{"uid":"x"}}`,
		"trailing garbage":                 beat("2026-12-04T10:05:00Z") + "}",
		"not json":                         `nope`,
		"a label":                          `{"metadata":{"labels":{"a":"b"}}}`,
		"a directive":                      `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[{"$patch":"delete","type":"Ready"}]}}`,
		"the heartbeat to the Node itself": "",
	}
	for name, patch := range short {
		node := fleetNode(uid)
		if !heartbeat([]byte(patch), node) {
			t.Errorf("%s: the shortcut refused %s", name, patch)
		}
	}
	for name, patch := range merged {
		if patch == "" {
			continue
		}
		if heartbeat([]byte(patch), fleetNode(uid)) {
			t.Errorf("%s: the shortcut took %s", name, patch)
		}
	}
	for name, patch := range merged {
		short[name] = patch
	}
	for name, patch := range short {
		subresource := "/status"
		if patch == "" {
			patch, subresource = beat("2026-12-04T10:05:00Z"), ""
		}
		var answers [2][]byte
		for i, shortcut := range []bool{true, false} {
			heartbeatShortcut = shortcut
			answers[i] = patchFleetNode(t, uid, subresource, patch)
		}
		heartbeatShortcut = true
		if !bytes.Equal(answers[0], answers[1]) {
			t.Errorf("%s: with the shortcut\n%s\nthe strategic merge\n%s", name, answers[0], answers[1])
		}
	}
}

// fleetNode is a Node as a fleet's agent registers it, with its images, the bulk of it.
func fleetNode(uid string) *corev1.Node {
	at := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	var conds []corev1.NodeCondition
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		status := corev1.ConditionFalse
		if c == corev1.NodeReady {
			status = corev1.ConditionTrue
		}
		conds = append(conds, corev1.NodeCondition{Type: c, Status: status, LastHeartbeatTime: at, LastTransitionTime: at, Reason: "Kubelet" + string(c), Message: "kubelet says " + string(c)})
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00007", UID: "d8994ab0-1748-47da-9576-1bf2ba53d349",
		Labels: map[string]string{"kubernetes.io/hostname": "fakelet-00007", "fakelet.dev/fleet": "f"}, Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{ProviderID: "fakelet://fakelet-00007"},
		Status: corev1.NodeStatus{
			Capacity:        agent.DefaultCapacity(),
			Allocatable:     corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("3900m"), corev1.ResourcePods: apiresource.MustParse("110")},
			Conditions:      conds,
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.128.0.8"}, {Type: corev1.NodeHostName, Address: "fakelet-00007"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{MachineID: "m", SystemUUID: "s", BootID: "b", KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64"},
			Images:          agent.Images(agent.MaxImages),
		}}
}

// patchFleetNode creates a fleet's Node, patches it and returns the patch's answers in protobuf
// and JSON, and the Node then, uids numbered.
func patchFleetNode(t *testing.T, uid, subresource, patch string) []byte {
	clk := testclock.NewFakeClock(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	s := New(Options{Clock: clk})
	var out bytes.Buffer
	do := func(method, path, contentType string, asJSON bool, body []byte) []byte {
		r := s.request(method, path, body)
		r.Header.Set("Content-Type", contentType)
		if asJSON {
			r.Header.Set("Accept", jsonType)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, r)
		fmt.Fprintf(&out, "%s %s: %d %q\n", method, path, rec.Code, rec.Body.Bytes())
		return rec.Body.Bytes()
	}
	var created corev1.Node
	unwrap(t, do(http.MethodPost, "/api/v1/nodes", protobufType, false, pbOf(t, "v1", "Node", fleetNode(uid))), &created)
	patch = strings.ReplaceAll(patch, uid, string(created.UID)) // the stand-in gives its own
	for _, asJSON := range []bool{false, true} {
		clk.Step(time.Minute)
		do(http.MethodPatch, "/api/v1/nodes/fakelet-00007"+subresource, "application/strategic-merge-patch+json", asJSON, []byte(patch))
	}
	do(http.MethodGet, "/api/v1/nodes/fakelet-00007", "", true, nil)
	return bytes.ReplaceAll(out.Bytes(), []byte(created.UID), []byte("uid"))
}
