package fleet

import (
	"context"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
)

// TestPodsRunInTheirOwnNamespace: a fleet with pods creates them in PodNamespace, which it creates
// labelled with its fleet where it is missing, and deletes again at the end once its pods are gone.
func TestPodsRunInTheirOwnNamespace(t *testing.T) {
	tf := startFleet(t, Config{Nodes: 2, PodsPerNode: 2, Fleet: "own", Footprint: agent.FootprintHeartbeat})
	tf.advance(t, 5*time.Second)
	tf.pollAdvancing(t, "4 Ready pods", func() bool { return tf.Progress().PodsReady == 4 })
	ns, err := tf.client.CoreV1().Namespaces().Get(context.Background(), fleetname.PodNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels[fleetname.Label] != "own" {
		t.Errorf("namespace %s labelled %v, want %s=own", fleetname.PodNamespace, ns.Labels, fleetname.Label)
	}
	for _, ns := range []string{metav1.NamespaceDefault, fleetname.PodNamespace} {
		pods, err := tf.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{metav1.NamespaceDefault: 0, fleetname.PodNamespace: 4}[ns]; len(pods.Items) != want {
			t.Errorf("%d pods in namespace %s, want %d", len(pods.Items), ns, want)
		}
	}
	if err := tf.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := tf.client.CoreV1().Namespaces().Get(context.Background(), fleetname.PodNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace the fleet created is still there after its cleanup: %v", err)
	}
}

// TestPodNamespaceOfOthersStays: the cleanup deletes the pods' namespace only if fakelet created it
// for this fleet and no pod is left in it.
func TestPodNamespaceOfOthersStays(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		pod    bool
		gone   bool
	}{
		{"created for this fleet, empty", map[string]string{fleetname.Label: "f"}, false, true},
		{"created by deploy/rbac/pods.yaml", nil, false, false},
		{"created for another fleet", map[string]string{fleetname.Label: "other"}, false, false},
		{"created for this fleet, another's pod in it", map[string]string{fleetname.Label: "f"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetname.PodNamespace, Labels: tc.labels, UID: "ns-1"}})
			if tc.pod {
				if _, err := client.CoreV1().Pods(fleetname.PodNamespace).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := EnsurePodNamespace(ctx, client, "f", "run-1"); err != nil {
				t.Fatal(err)
			}
			if err := DeletePodNamespace(ctx, client, "f"); err != nil {
				t.Fatal(err)
			}
			_, err := client.CoreV1().Namespaces().Get(ctx, fleetname.PodNamespace, metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != tc.gone {
				t.Errorf("namespace gone %v (%v), want %v", gone, err, tc.gone)
			}
		})
	}
}

// TestPodNamespaceBeingDeletedIsWaitedFor: a namespace an earlier run's cleanup is deleting admits no
// pod; the fleet waits until it is gone and creates it again.
func TestPodNamespaceBeingDeletedIsWaitedFor(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetname.PodNamespace, UID: "old",
		Labels: map[string]string{fleetname.Label: "f"}, DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}})
	done := make(chan error, 1)
	go func() { done <- EnsurePodNamespace(ctx, client, "f", "run-2") }()
	// Once it watches the namespace, it is waiting.
	for watching := false; !watching; {
		select {
		case err := <-done:
			t.Fatalf("returned (%v) while the namespace was being deleted", err)
		default:
		}
		for _, a := range client.Actions() {
			watching = watching || a.GetVerb() == "watch" && a.GetResource().Resource == "namespaces"
		}
		runtime.Gosched()
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, fleetname.PodNamespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ns, err := client.CoreV1().Namespaces().Get(ctx, fleetname.PodNamespace, metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp != nil || ns.Annotations[fleetname.RunAnnotation] != "run-2" {
		t.Errorf("namespace after the wait: %+v (%v), want a new one of run-2", ns, err)
	}
}
