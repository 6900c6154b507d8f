package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleet"
)

// TestPodsOfAnyoneRun: pods the fleet did not create, bound to its nodes by spec.nodeName (as the
// scheduler binds them), run as a kubelet runs them: a bare pod is Running and Ready with an IP, a
// pod asking for more CPU than the node has fails OutOfcpu, a pod with restartPolicy Never running
// `sleep 3` Succeeds; deleted, the running pod's kubelet finishes its deletion. In the kubelet
// footprint the agents learn of the pods from their own pod watches, in the heartbeat footprint from
// the fleet's one watch of bound pods.
func TestPodsOfAnyoneRun(t *testing.T) {
	for _, fp := range []agent.Footprint{agent.FootprintKubelet, agent.FootprintHeartbeat} {
		t.Run(string(fp), func(t *testing.T) { podsOfAnyoneRun(t, fp) })
	}
}

func podsOfAnyoneRun(t *testing.T, fp agent.Footprint) {
	c := admin(t, controlPlane(t))
	prefix := "wl" + string(fp[0])
	f, err := fleet.New(fleet.Config{Nodes: 2, Fleet: prefix, NamePrefix: prefix, RegisterQPS: 50, Footprint: fp,
		Template: agent.TemplateOptions{Images: 5}}, controlPlane(t).AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	runInBackground(t, f)
	ctx := context.Background()
	eventually(t, time.Minute, "the default ServiceAccount", func() (bool, error) {
		_, err := c.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	pods := c.CoreV1().Pods(metav1.NamespaceDefault)
	node := fleet.NodeName(prefix, 1)
	create := func(name string, mutate func(*corev1.Pod)) {
		name = prefix + name
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		if mutate != nil {
			mutate(p)
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete pod %s: %v", name, err)
			}
		})
	}
	create("-bare", nil)
	create("-big", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
	})
	create("-job", func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.Containers[0].Image = "busybox"
		p.Spec.Containers[0].Command = []string{"sleep", "3"}
	})
	get := func(name string) *corev1.Pod {
		p, err := pods.Get(ctx, prefix+name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	eventually(t, time.Minute, "the bare pod Running and Ready", func() (bool, error) {
		p := get("-bare")
		return p.Status.Phase == corev1.PodRunning && podIsReady(p) && p.Status.PodIP != "", nil
	})
	eventually(t, 30*time.Second, "the big pod Failed", func() (bool, error) { return get("-big").Status.Phase == corev1.PodFailed, nil })
	if p := get("-big"); p.Status.Reason != "OutOfcpu" || !strings.HasPrefix(p.Status.Message, "Pod was rejected: Node didn't have enough resource: cpu") {
		t.Errorf("big pod: reason %q message %q, want OutOfcpu", p.Status.Reason, p.Status.Message)
	}
	eventually(t, 30*time.Second, "the Never pod Succeeded", func() (bool, error) { return get("-job").Status.Phase == corev1.PodSucceeded, nil })

	// A user deletes the running pod with its grace period: its kubelet stops it and deletes it.
	if err := pods.Delete(ctx, prefix+"-bare", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the deleted pod gone", func() (bool, error) {
		_, err := pods.Get(ctx, prefix+"-bare", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
