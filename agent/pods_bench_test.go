package agent

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"fakelet.dev/fakelet/internal/heapsize"
)

// deploymentPod is a pod as a Deployment's ReplicaSet creates it and the apiserver admits it: its
// labels, owner, service account token volume, default tolerations, requests and scheduled status.
func deploymentPod(node string, i int) *corev1.Pod {
	name := fmt.Sprintf("web-7d9c5b6f4-%05d", i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(fmt.Sprintf("6f1c0a52-8e8b-4d6e-9c1a-%012d", i)),
			ResourceVersion: "12345", Generation: 1, CreationTimestamp: metav1.NewTime(t0),
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d9c5b6f4"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9c5b6f4", UID: "rs-uid", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("10Mi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			}}}}},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			ServiceAccountName: "default",
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}},
	}
}

// BenchmarkHeapPerPod is what an agent keeps of each running pod: the pods of a node observed (as a
// watch decodes them), admitted, run and reported, and the decoded pods let go as the kubelet
// footprint's agents let them go. b.N is pods; the figure is heap bytes per pod.
func BenchmarkHeapPerPod(b *testing.B) {
	a, r := benchAgent(b)
	a.cfg.Footprint = FootprintKubelet
	a.run = r
	const perNode = 110
	agents := []*Agent{a}
	for len(agents)*perNode < b.N {
		agents = append(agents, New(a.cfg, Clients{}, fmt.Sprintf("fakelet-%05d", len(agents)), len(agents), ""))
	}
	before := heapsize.Live()
	b.ResetTimer()
	for i := range b.N {
		ag := agents[i/perNode]
		ag.ObservePod(deploymentPod(ag.name, i))
	}
	now := t0.Add(2 * time.Second)
	for _, ag := range agents {
		ag.mu.Lock()
		ag.admitPodsLocked(t0)
		for _, st := range ag.pods {
			st.advance(now, PodFault{})
			st.view.podIP = ag.nextPodIPLocked(st)
			st.settle(now)
			st.reported, st.hasReported = st.view.clone(), true
		}
		ag.mu.Unlock()
	}
	b.StopTimer()
	after := heapsize.Live()
	for _, ag := range agents {
		for _, st := range ag.pods {
			if st.view.phase != corev1.PodRunning || st.pending != nil {
				b.Fatalf("pod %s: %s, decoded pod kept %v: want Running, let go", st.name, st.view.phase, st.pending != nil)
			}
		}
	}
	b.ReportMetric(float64(after-before)/float64(b.N), "heap-B/pod")
	runtime.KeepAlive(agents)
}
