package agent

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/internal/heapsize"
)

// BenchmarkHeapPerNode is the unit-level counterpart of make bench's fleet RSS per node: the Go
// heap an agent holds once it has registered, renewed its Lease and, in the kubelet footprint,
// created its CSINode, sent its Events and listed its watches, per footprint, against client-go's
// fake clientset on the fake clock. What the fake apiserver keeps (its objects, its record of
// requests) is dropped before the heap is read, and so are the watch streams: the transport's side
// of a held watch is fleet's BenchmarkWatchHeld. Run it with -benchtime 1x.
func BenchmarkHeapPerNode(b *testing.B) {
	for _, fp := range []Footprint{FootprintHeartbeat, FootprintKubelet} {
		b.Run(string(fp), func(b *testing.B) {
			const agents = 200
			var perNode float64
			for b.Loop() {
				perNode = heapPerNode(b, fp, agents)
			}
			b.ReportMetric(perNode, "heap-B/node")
		})
	}
}

// answeringWatcher answers every streaming list with the bookmark that ends its initial events, as
// a server with nothing to list does, and keeps nothing of the stream.
type answeringWatcher struct {
	mu      sync.Mutex
	pending []WatchHandler
}

func (w *answeringWatcher) Watch(_ context.Context, _ WatchRequest, h WatchHandler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, h)
}

// answer plays the server for the streams opened since the last call, outside the agents' calls.
func (w *answeringWatcher) answer() {
	w.mu.Lock()
	hs := w.pending
	w.pending = nil
	w.mu.Unlock()
	for _, h := range hs {
		h.Opened(nil)
		h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "1", InitialEventsEnd: true})
	}
}

func heapPerNode(b *testing.B, fp Footprint, agents int) float64 {
	b.Helper()
	fc := testingclock.NewFakeClock(t0)
	sched, ctx := runScheduler(b, fc)
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "bench", Images: MaxImages})
	if err != nil {
		b.Fatal(err)
	}
	client := fake.NewClientset()
	// The fake tracker assigns no UIDs, which owner references need.
	var uids atomic.Int64
	client.PrependReactor("create", "*", func(action k8stesting.Action) (bool, k8sruntime.Object, error) {
		if m, err := meta.Accessor(action.(k8stesting.CreateAction).GetObject()); err == nil && m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", uids.Add(1))))
		}
		return false, nil, nil
	})
	cfg := &Config{Template: tmpl, Heartbeat: kubeletHeartbeat(b), Scheduler: sched,
		Rand: func() float64 { return 0.5 }, Footprint: fp}
	w := &answeringWatcher{}
	api := Clients{Core: client.CoreV1(), Coordination: client.CoordinationV1(), Storage: client.StorageV1(), Watches: w}

	before := heapsize.Live()
	fleet := make([]*Agent, agents)
	for i := range fleet {
		fleet[i] = New(cfg, api, fmt.Sprintf("fakelet-%05d", i), i, "zone-1")
		fleet[i].Start(ctx)
	}
	// Past registration, the first renewals and status reports, the CSINode's backoffs and the
	// Events' drain: a minute of the fake clock, the watches answered every second.
	for at := time.Duration(0); at <= time.Minute; at += time.Second {
		sched.Advance(fc, t0.Add(at))
		w.answer()
	}
	for _, a := range fleet {
		if node, lease := a.Owned(); node == "" || lease == "" {
			b.Fatalf("%s did not register and create its Lease", a.name)
		}
	}
	csiNodes, events := dropServerState(b, client)
	if want := agents * b2i(fp == FootprintKubelet); csiNodes != want || events < want {
		b.Fatalf("the fake apiserver held %d CSINodes and %d Events, want %d and at least %d", csiNodes, events, want, want)
	}
	after := heapsize.Live()
	runtime.KeepAlive(fleet)
	return float64(after-before) / float64(agents)
}

// dropServerState deletes what the fake apiserver holds for the agents and its record of their
// requests, so that the heap counts the agents' side only. It returns the CSINodes and Events it
// deleted.
func dropServerState(b *testing.B, client *fake.Clientset) (csiNodes, events int) {
	b.Helper()
	ctx := context.Background()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes.Items {
		_ = client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		_ = client.CoordinationV1().Leases(LeaseNamespace).Delete(ctx, n.Name, metav1.DeleteOptions{})
		if client.StorageV1().CSINodes().Delete(ctx, n.Name, metav1.DeleteOptions{}) == nil {
			csiNodes++
		}
	}
	list, err := client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range list.Items {
		_ = client.CoreV1().Events(e.Namespace).Delete(ctx, e.Name, metav1.DeleteOptions{})
	}
	client.ClearActions()
	return csiNodes, len(list.Items)
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
