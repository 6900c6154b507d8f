package agent

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// forbidden is the Node authorizer's answer to a GET of a pod it does not know is bound to the node
// yet: its graph follows the binding a moment after the kubelet's pod watch does.
var forbidden = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-1", nil)

// A status sync that fails is retried at the status manager's next batch, which the pod's next
// status change starts (its containers found running a relist, 1 s, later), not only at the
// 10 s sync period: the kubelet then GETs the pod and patches its latest status, Running.
func TestPodStatusRetriedAtItsNextChange(t *testing.T) {
	h, a := startKubelet(t, "10.244.3.0/24")
	pod := kubeletPod(t, h, "web-1", nil)
	h.take()
	h.failNext("get", "pods", 1, forbidden)
	a.ObservePod(pod)
	h.advance(6500 * time.Millisecond)
	calls := h.take()
	var reqs []string
	for _, c := range calls {
		if c.res == "pods" || c.res == "pods/status" {
			reqs = append(reqs, c.verb+" "+c.res+" at "+c.at.String())
		}
	}
	if got, want := strings.Join(reqs, "; "), "get pods at 5s; get pods at 6s; patch pods/status at 6s"; got != want {
		t.Errorf("requests %s, want %s", got, want)
	}
	if s := h.pod("web-1").Status; s.Phase != corev1.PodRunning {
		t.Errorf("phase %s at 6.5 s, want Running", s.Phase)
	}
}

// The status manager's batch syncs every pod whose status the server has not accepted: a pod whose
// sync failed is retried when another pod's status change starts one.
func TestPodStatusRetriedInAnotherPodsBatch(t *testing.T) {
	h, a := startKubelet(t, "10.244.3.0/24")
	first := kubeletPod(t, h, "web-1", func(p *corev1.Pod) {
		p.Spec.Containers[0].Image = "registry.k8s.io/app:1.0"
		p.Annotations = map[string]string{"fakelet.dev/start-delay": "30s"}
	})
	h.take()
	h.failNext("get", "pods", 1, forbidden)
	a.ObservePod(first)
	h.advance(5300 * time.Millisecond)
	second := kubeletPod(t, h, "web-2", nil)
	a.ObservePod(second)
	h.advance(5500 * time.Millisecond)
	var reqs []string
	for _, c := range h.take() {
		if c.verb != "create" && (c.res == "pods" || c.res == "pods/status") {
			reqs = append(reqs, c.verb+" "+c.res+" at "+c.at.String())
		}
	}
	// web-1 fails at 5 s; web-2's first sync at 5.3 s is a batch, which reports web-1 too.
	if got, want := strings.Join(reqs, "; "), "get pods at 5s; get pods at 5.3s; patch pods/status at 5.3s; get pods at 5.3s; patch pods/status at 5.3s"; got != want {
		t.Errorf("requests %s, want %s", got, want)
	}
}
