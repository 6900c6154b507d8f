package fleet

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/heapsize"
)

// BenchmarkHeapPerFleetPod is what the fleet's pod watch keeps of each of the fleet's own pods
// (podsPerNode) besides its agent's state (agent's BenchmarkHeapPerPod): what its store keeps of the
// pod (fleetPod), and the created and ready maps' entries. b.N is
// pods; the figure is heap bytes per pod.
func BenchmarkHeapPerFleetPod(b *testing.B) {
	pods := make([]*fleetPod, 0, b.N)
	created := map[string]types.UID{}
	ready := map[string]bool{}
	before := heapsize.Live()
	b.ResetTimer()
	for i := range b.N {
		name := PodName(fleetname.NodeName(fleetname.DefaultNamePrefix, i/30), i%30)
		uid := types.UID(fmt.Sprintf("6f1c0a52-8e8b-4d6e-9c1a-%012d", i))
		now := metav1.Now()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleetname.PodNamespace, UID: uid, ResourceVersion: fmt.Sprint(1000 + i),
				Labels: map[string]string{fleetname.Label: fleetname.DefaultFleet}, Annotations: map[string]string{fleetname.RunAnnotation: "run"}},
			Spec: corev1.PodSpec{NodeName: fleetname.NodeName(fleetname.DefaultNamePrefix, i/30), Containers: []corev1.Container{{Name: "pause", Image: PodImage}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, PodIP: "100.64.0.2", QOSClass: corev1.PodQOSBestEffort,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}, {Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
					{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "pause", Ready: true, Image: PodImage, ImageID: "registry.k8s.io/pause@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}},
		}
		pods = append(pods, compactPod(p, fleetname.DefaultFleet))
		created[name] = uid
		ready[name] = true
	}
	b.StopTimer()
	after := heapsize.Live()
	b.ReportMetric(float64(after-before)/float64(b.N), "heap-B/pod")
	runtime.KeepAlive(pods)
	runtime.KeepAlive(created)
	runtime.KeepAlive(ready)
}
