package workload

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/heapsize"
)

// BenchmarkSummary30000Pods is the summary of 1000 nodes of 30 pods, a third of them stopped and
// their pods evicted and replaced: the end of a large run's record.
func BenchmarkSummary30000Pods(b *testing.B) {
	c := testingclock.NewFakeClock(t0)
	r := NewRecorder(c, t0)
	pod := func(i int, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p-", i), UID: types.UID(fmt.Sprint(i)),
			Labels: map[string]string{WorkloadLabel: "web"}, CreationTimestamp: metav1.NewTime(c.Now())},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	for i := range 30000 {
		r.ObservePod(nil, pod(i, fmt.Sprint("n", i%1000)))
	}
	c.Step(time.Minute)
	for n := range 333 {
		r.Applied("outage", "victims", "stop", fmt.Sprint("n", n), c.Now())
	}
	c.Step(time.Minute)
	next := 30000
	for i := range 30000 {
		if i%1000 >= 333 {
			continue
		}
		old := pod(i, fmt.Sprint("n", i%1000))
		gone := old.DeepCopy()
		gone.DeletionTimestamp = &metav1.Time{Time: c.Now()}
		r.ObservePod(old, gone)
		r.ObservePod(nil, pod(next, fmt.Sprint("n", 500+i%500)))
		next++
	}
	b.ResetTimer()
	for range b.N {
		if s := r.Summary("ns", nil, c.Now()); s.Reactions[0].Pods != 9990 {
			b.Fatalf("%d pods affected", s.Reactions[0].Pods)
		}
	}
}

// BenchmarkRecorderHeapPerPod reports the Recorder's heap per pod (heap-B/pod) for 30,000 pods,
// each created, bound, Running and Ready, as a run of 1000 nodes of 30 pods keeps them.
func BenchmarkRecorderHeapPerPod(b *testing.B) {
	const pods = 30000
	for range b.N {
		c := testingclock.NewFakeClock(t0)
		before := heapsize.Live()
		r := NewRecorder(c, t0)
		for i := range pods {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("web-7d9c6b5f4-", i), UID: types.UID(fmt.Sprintf("%036d", i)),
				Labels: map[string]string{WorkloadLabel: "web"}, CreationTimestamp: metav1.NewTime(c.Now())}}
			r.ObservePod(nil, p)
			bound := p.DeepCopy()
			bound.Spec.NodeName = fmt.Sprintf("fakelet-%05d", i%1000)
			r.ObservePod(p, bound)
			running := bound.DeepCopy()
			running.Status.Phase = corev1.PodRunning
			running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			r.ObservePod(bound, running)
		}
		b.ReportMetric(float64(heapsize.Live()-before)/pods, "heap-B/pod")
		runtime.KeepAlive(r)
	}
}
