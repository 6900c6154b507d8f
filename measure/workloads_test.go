package measure

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/measure/reaction"
	"fakelet.dev/fakelet/measure/record"
	"fakelet.dev/fakelet/measure/workload"
)

// A session with workloads watches their namespace from Start, pairs the pods with the ops applied
// to their nodes, and puts the workloads' summary in the record.
func TestSessionRecordsTheWorkloads(t *testing.T) {
	client := fake.NewClientset()
	var startups atomic.Int64
	s := New(Options{Client: client, OnPodStartup: func(workload.Startup) { startups.Add(1) }})
	s.ObserveWorkloads("wl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	pods := client.CoreV1().Pods("wl")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "wl", UID: "u1", Labels: map[string]string{workload.WorkloadLabel: "web"},
		CreationTimestamp: metav1.Now()}, Spec: corev1.PodSpec{NodeName: "n0"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, done func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return done(), nil }); err != nil {
			t.Fatalf("%s: never", what)
		}
	}
	waitFor("the pod's startup", func() bool {
		return s.Record("p", record.Parameters{}, record.Versions{}, record.Target{}).Workloads.Pods == 1
	})
	s.PhaseBegan("outage", time.Now())
	s.Applied(reaction.Action{Phase: "outage", Group: "victims", Op: "stop", Node: "n0", At: time.Now()})
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the pod not Ready", func() bool {
		re := s.Record("p", record.Parameters{}, record.Versions{}, record.Target{}).Workloads.Reactions
		return len(re) == 1 && len(re[0].Steps) == 1 && re[0].Steps[0].Name == workload.StepNotReady
	})
	// The runner deletes the workloads after the last phase, which the session's own phases do not
	// see end (a run's do not): no eviction.
	s.EndWorkloads(time.Now())
	if err := pods.Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	later := pod.DeepCopy()
	later.Name, later.UID = "web-2", "u2"
	if _, err := pods.Create(ctx, later, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the pod after the deletion", func() bool {
		return s.Record("p", record.Parameters{}, record.Versions{}, record.Target{}).Workloads.Pods == 2
	})
	s.Stop()
	rec := s.Record("p", record.Parameters{}, record.Versions{}, record.Target{})
	if steps := rec.Workloads.Reactions[0].Steps; len(steps) != 1 {
		t.Errorf("steps %+v: the deletion after the last phase counted", steps)
	}
	if w := rec.Workloads; w.Namespace != "wl" || w.Reactions[0].Pods != 1 || w.Reactions[0].Lost != 1 || startups.Load() != 2 {
		t.Errorf("workloads %+v, %d startups seen live", w, startups.Load())
	}
}

// Workloads observed after the session started are watched all the same.
func TestSessionWatchesWorkloadsObservedAfterStart(t *testing.T) {
	client := fake.NewClientset()
	s := New(Options{Client: client})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	s.ObserveWorkloads("wl")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "wl", UID: "u1"}}
	if _, err := client.CoreV1().Pods("wl").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return s.Record("p", record.Parameters{}, record.Versions{}, record.Target{}).Workloads.Pods == 1, nil
	}); err != nil {
		t.Fatal("the pod was never seen")
	}
}
