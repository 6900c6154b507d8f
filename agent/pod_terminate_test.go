package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// The status manager sends a deleted pod's final DELETE once. The fleet's watch shows the agent the
// pod's own stopping and terminal reports while it finishes the pod, and again after it deleted it
// (a watch runs late); neither starts another sync of the pod beside the one running, and a pod
// the agent deleted gets no request more, not even a GET.
func TestDeletedPodGetsOneFinalDelete(t *testing.T) {
	h, a := kubeletStartAgent(t)
	pods := h.client.CoreV1().Pods("fakelet")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00003-0", Namespace: "fakelet", UID: "pod-uid"},
		Spec: corev1.PodSpec{NodeName: "fakelet-00003", Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}}}
	created, err := pods.Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	a.ObservePod(created)
	h.advance(10 * time.Second)
	running, err := pods.Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil || !runningReady(running) {
		t.Fatalf("pod %v (%v), want it Running and Ready", running, err)
	}

	// The terminal report's watch event comes while the first DELETE is on its way (the fake
	// apiserver answers it before it lands, as a busy apiserver may): a second sync started then
	// finds the pod still there, Succeeded, and deletes it again.
	var seen []*corev1.Pod // the pod as the watch showed it during the DELETE
	deletes := 0
	h.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		deletes++
		if deletes > 1 {
			return false, nil, nil
		}
		latest, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "fakelet", pod.Name)
		if err != nil {
			t.Errorf("get the terminated pod: %v", err)
			return false, nil, nil
		}
		seen = append(seen, latest.(*corev1.Pod))
		a.ObservePod(latest.(*corev1.Pod))
		return true, nil, nil
	})
	deleting := running.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: h.clock.Now()}
	if _, err := pods.Update(context.Background(), deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.take()
	a.ObservePod(deleting)
	h.advance(20 * time.Second)
	// Late watch events of the deleted pod: its deletion and its terminal report.
	for _, p := range append([]*corev1.Pod{deleting}, seen...) {
		a.ObservePod(p)
	}
	h.advance(40 * time.Second)
	if deletes != 1 {
		t.Errorf("%d DELETEs of the pod, want 1", deletes)
	}
	var got []string
	for _, c := range h.take() {
		if c.res == "pods/status" || c.res == "pods" && c.verb != "delete" {
			got = append(got, c.verb+" "+c.res)
		}
	}
	if want := "get pods; patch pods/status; get pods; patch pods/status; get pods"; summaryOf(got) != want {
		t.Errorf("GETs and patches:\n got %s\nwant %s", summaryOf(got), want)
	}
	if known, _ := a.Pods(); known != 0 {
		t.Errorf("the agent knows %d pods after it deleted its one", known)
	}
}

func summaryOf(s []string) string { return strings.Join(s, "; ") }
