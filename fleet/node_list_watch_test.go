package fleet

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"fakelet.dev/fakelet/agent"
	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/standin"
)

// TestNodeWatchSharesTheTemplatesImages: over an apiserver's REST client (the stand-in's), the
// fleet's Node watch decodes each Node of its events as client-go does, but for its images: the
// template's own list, not a copy decoded from every event.
func TestNodeWatchSharesTheTemplatesImages(t *testing.T) {
	_, cfg := standin.ServeLoopback(t, standin.Options{})
	client, err := adminClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := agent.NewTemplate(agent.TemplateOptions{Fleet: "f", Images: agent.MaxImages})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := client.CoreV1().Nodes()
	ours := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "f-0", Labels: map[string]string{fleetname.Label: "f"}},
		Status: corev1.NodeStatus{Images: tmpl.Images, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	theirs := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "g-0", Labels: map[string]string{fleetname.Label: "g"}}}
	for _, n := range []*corev1.Node{ours, theirs} {
		if _, err := nodes.Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	lw, err := nodeListWatch(client, tmpl, labels.SelectorFromSet(labels.Set{fleetname.Label: "f"}).String())
	if err != nil {
		t.Fatal(err)
	}
	list, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if items := list.(*corev1.NodeList).Items; len(items) != 1 || items[0].Name != "f-0" {
		t.Fatalf("listed %+v, want the fleet's one Node", items)
	}
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: list.(*corev1.NodeList).ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	stored, err := nodes.Get(ctx, "f-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored.Status.Conditions[0].Status = corev1.ConditionUnknown
	if stored, err = nodes.UpdateStatus(ctx, stored, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-w.ResultChan():
		n, ok := e.Object.(*corev1.Node)
		if e.Type != watch.Modified || !ok {
			t.Fatalf("event %s of a %T, want the Node modified", e.Type, e.Object)
		}
		if !reflect.DeepEqual(n, stored) {
			t.Errorf("watched\n%+v\nwant what client-go decodes\n%+v", n, stored)
		}
		if &n.Status.Images[0] != &tmpl.Images[0] {
			t.Error("the watched Node's images are decoded, not the template's")
		}
	case <-ctx.Done():
		t.Fatal("no event")
	}
}
