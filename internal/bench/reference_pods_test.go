package bench

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"fakelet.dev/fakelet/fleetname"
)

func TestReferencePodIsTheSchedulers(t *testing.T) {
	nodes := []string{"hollow-00000", "fakelet-00000"}
	p := referencePod(3, nodes)
	if p.Spec.NodeName != "" {
		t.Fatalf("pod bound to %s: the scheduler should place it", p.Spec.NodeName)
	}
	terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || terms[0].MatchExpressions[0].Key != corev1.LabelHostname || len(terms[0].MatchExpressions[0].Values) != 2 {
		t.Errorf("node affinity %+v: want the reference's two nodes by hostname", terms)
	}
	spread := p.Spec.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].MaxSkew != 1 || spread[0].WhenUnsatisfiable != corev1.DoNotSchedule ||
		spread[0].TopologyKey != corev1.LabelHostname || !maps.Equal(spread[0].LabelSelector.MatchLabels, p.Labels) {
		t.Errorf("spread %+v: want every node given as many of the reference's pods (maxSkew 1 over hostnames, DoNotSchedule)", spread)
	}
}

func TestWaitPlacedCountsBoundPods(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	created := map[string]*corev1.Pod{}
	for i, node := range []string{"hollow-00000", "fakelet-00000", ""} {
		p := referencePod(i, []string{"hollow-00000", "fakelet-00000"})
		p.UID = types.UID("uid-" + p.Name)
		p.Spec.NodeName = node
		if _, err := c.CoreV1().Pods(fleetname.PodNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created[p.Name] = p
	}
	// One pod stays unscheduled: waitPlaced returns at its deadline with the two that were bound.
	placed, err := waitPlaced(ctx, c, created, time.Now().Add(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"ref-0": "hollow-00000", "ref-1": "fakelet-00000"}; !maps.Equal(placed, want) {
		t.Errorf("placed %v, want %v", placed, want)
	}
	// The scheduler binds it while waitPlaced watches: it returns with all three.
	watching, once := make(chan struct{}), sync.Once{}
	c.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
	done := make(chan map[string]string)
	go func() {
		placed, err := waitPlaced(ctx, c, created, time.Now().Add(time.Minute))
		if err != nil {
			t.Error(err)
		}
		done <- placed
	}()
	<-watching
	bound := created["ref-2"].DeepCopy()
	bound.Spec.NodeName = "hollow-00000"
	if _, err := c.CoreV1().Pods(fleetname.PodNamespace).Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if placed := <-done; len(placed) != 3 || placed["ref-2"] != "hollow-00000" {
		t.Errorf("placed %v, want ref-2 on hollow-00000 with the others", placed)
	}
}
