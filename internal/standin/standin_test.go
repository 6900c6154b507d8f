package standin

import (
	"context"
	"net/http"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// serve starts a stand-in on a loopback port and returns it with a protobuf clientset for it.
func serve(t *testing.T, o Options) (*Server, *kubernetes.Clientset) {
	t.Helper()
	s, cfg := ServeLoopback(t, o)
	cfg.ContentConfig = rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf", AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"}
	cfg.QPS, cfg.UserAgent = -1, "kubelet/v1.37.2"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, cs
}

func testLease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40)}}
}

func TestLeaseCreateGetUpdateAndConflict(t *testing.T) {
	_, cs := serve(t, Options{})
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases("kube-node-lease")
	created, err := leases.Create(ctx, testLease("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || len(created.ManagedFields) != 1 || created.ManagedFields[0].Manager != "kubelet" {
		t.Fatalf("created lease lacks what the apiserver sets: %+v", created.ObjectMeta)
	}
	if _, err := leases.Create(ctx, testLease("n1"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want 409 AlreadyExists", err)
	}
	renewed := created.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	updated, err := leases.Update(ctx, renewed, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == created.ResourceVersion || updated.UID != created.UID {
		t.Fatalf("update: resourceVersion %s after %s, uid %s after %s", updated.ResourceVersion, created.ResourceVersion, updated.UID, created.UID)
	}
	// The first copy is stale now: a PUT of it is a conflict, as the lease controller's GET-and-retry expects.
	if _, err := leases.Update(ctx, renewed, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("PUT at a stale resourceVersion: %v, want 409 Conflict", err)
	}
	got, err := leases.Get(ctx, "n1", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != updated.ResourceVersion || !got.Spec.RenewTime.Equal(updated.Spec.RenewTime) {
		t.Fatalf("GET after the update: %v, %+v", err, got)
	}
	if _, err := leases.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("GET of a missing lease: %v, want 404", err)
	}
	if _, err := leases.Update(ctx, testLease("missing"), metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("PUT of a missing lease: %v, want 404", err)
	}
}

func TestNodeStatusPatchIsWhatTheNextGetReturns(t *testing.T) {
	_, cs := serve(t, Options{})
	ctx := context.Background()
	nodes := cs.CoreV1().Nodes()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"fakelet.dev/fleet": "f"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("4")}}}
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"uid":"` + string(created.UID) + `"},"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}`)
	if _, err := nodes.Patch(ctx, "n1", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	got, err := nodes.Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Status.Conditions; len(c) != 1 || c[0].Status != corev1.ConditionTrue || c[0].Reason != "KubeletReady" || got.Status.Capacity.Cpu().String() != "4" {
		t.Fatalf("after the patch the Node's status is %+v", got.Status)
	}
	stale := []byte(`{"metadata":{"uid":"not-the-node"},"status":{"phase":"Running"}}`)
	if _, err := nodes.Patch(ctx, "n1", types.StrategicMergePatchType, stale, metav1.PatchOptions{}, "status"); !apierrors.IsConflict(err) {
		t.Fatalf("a patch with another uid as its precondition: %v, want 409", err)
	}
}

func TestWatchStreamingListEndsWithBookmarkThenEventsAndBookmarks(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	_, cs := serve(t, Options{Clock: clk, Bookmarks: time.Minute})
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases("kube-node-lease")
	if _, err := leases.Create(ctx, testLease("n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true, SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, FieldSelector: "metadata.name=n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() watch.Event {
		t.Helper()
		select {
		case ev := <-w.ResultChan():
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event in 10 s")
			return watch.Event{}
		}
	}
	if ev := next(); ev.Type != watch.Added || ev.Object.(*coordinationv1.Lease).Name != "n1" {
		t.Fatalf("first event %v %T, want the lease ADDED", ev.Type, ev.Object)
	}
	ev := next()
	if ev.Type != watch.Bookmark || ev.Object.(*coordinationv1.Lease).Annotations[initialEventsEnd] != "true" {
		t.Fatalf("second event %v %+v, want the bookmark that ends the initial events", ev.Type, ev.Object)
	}
	got, _ := leases.Get(ctx, "n1", metav1.GetOptions{})
	got.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	updated, err := leases.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Type != watch.Modified || ev.Object.(*coordinationv1.Lease).ResourceVersion != updated.ResourceVersion {
		t.Fatalf("after the update: %v %+v, want MODIFIED at %s", ev.Type, ev.Object, updated.ResourceVersion)
	}
	// Another lease's renewal does not reach a watch of n1.
	if _, err := leases.Create(ctx, testLease("n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Minute)
	if ev := next(); ev.Type != watch.Bookmark {
		t.Fatalf("a minute on: %v %+v, want a bookmark (and nothing of n2)", ev.Type, ev.Object)
	}
}

func TestReviewsAllowAndUnknownPathsAre404(t *testing.T) {
	_, cs := serve(t, Options{})
	ctx := context.Background()
	if _, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("missing lease: %v", err)
	}
	res := cs.Discovery().RESTClient().Get().AbsPath("/apis/nothing.example/v1/things").Do(ctx)
	var code int
	res.StatusCode(&code)
	if code != http.StatusNotFound {
		t.Fatalf("an unserved resource answered %d, want 404", code)
	}
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases"}}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Allowed {
		t.Fatalf("SelfSubjectAccessReview: %v, %+v", err, review)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.GitVersion != GitVersion {
		t.Fatalf("version %v, %v", v, err)
	}
}

func TestConcurrentUpdatesAtOneResourceVersionOneWins(t *testing.T) {
	_, cs := serve(t, Options{})
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases("kube-node-lease")
	created, err := leases.Create(ctx, testLease("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const writers = 8
	errs := make(chan error, writers)
	for range writers {
		go func() {
			l := created.DeepCopy()
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, err := leases.Update(ctx, l, metav1.UpdateOptions{})
			errs <- err
		}()
	}
	var ok, conflicts int
	for range writers {
		switch err := <-errs; {
		case err == nil:
			ok++
		case apierrors.IsConflict(err):
			conflicts++
		default:
			t.Errorf("update: %v", err)
		}
	}
	if ok != 1 || conflicts != writers-1 {
		t.Fatalf("%d updates at one resourceVersion: %d stored, %d conflicts; want 1 and %d", writers, ok, conflicts, writers-1)
	}
}

// A watch the stand-in ended as too slow resumes at the last resourceVersion its client saw, as a
// reflector does, and is sent what it missed from the history, as kube-apiserver's watch cache
// sends it, instead of relisting.
func TestAWatchEndedAsTooSlowResumesWithWhatItMissed(t *testing.T) {
	s, cs := serve(t, Options{})
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases("kube-node-lease")
	first, err := leases.Create(ctx, testLease("n0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := s.stores[resourcePath("coordination.k8s.io", "v1", "leases")]
	full := &watcher{events: make(chan event), dropped: make(chan struct{})} // never has room
	st.mu.Lock()
	st.watchers.add(full)
	st.mu.Unlock()
	lost, err := leases.Create(ctx, testLease("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-full.dropped:
	default:
		t.Fatal("the watch without room was not ended")
	}
	lost.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	renewed, err := leases.Update(ctx, lost, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatalf("a watch resumed at %s, before the change it missed at %s: %v", first.ResourceVersion, lost.ResourceVersion, err)
	}
	defer w.Stop()
	for _, want := range []struct {
		typ watch.EventType
		rv  string
	}{{watch.Added, lost.ResourceVersion}, {watch.Modified, renewed.ResourceVersion}} {
		select {
		case ev := <-w.ResultChan():
			if l, ok := ev.Object.(*coordinationv1.Lease); !ok || ev.Type != want.typ || l.ResourceVersion != want.rv {
				t.Fatalf("resumed watch: %v %+v, want %v at %s", ev.Type, ev.Object, want.typ, want.rv)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("resumed watch: no event in 10 s, want %v at %s", want.typ, want.rv)
		}
	}
}

// A watch resumed before the oldest change the history holds cannot be told what it missed: 410
// Expired, so that its client relists, as past the apiserver's history.
func TestAWatchResumedBeforeTheHistoryIsExpired(t *testing.T) {
	_, cs := serve(t, Options{WatchHistory: 2})
	ctx := context.Background()
	leases := cs.CoordinationV1().Leases("kube-node-lease")
	var rvs []string
	for _, name := range []string{"n0", "n1", "n2", "n3"} {
		l, err := leases.Create(ctx, testLease(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, l.ResourceVersion)
	}
	// The history holds n2 and n3: a watch from n1 misses nothing, one from n0 misses n1.
	if _, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: rvs[0]}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("a watch resumed at %s, before the history's oldest change after %s: %v, want 410 Expired", rvs[0], rvs[1], err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: rvs[1], FieldSelector: "metadata.name=n3"})
	if err != nil {
		t.Fatalf("a watch resumed at %s: %v", rvs[1], err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if l, ok := ev.Object.(*coordinationv1.Lease); !ok || ev.Type != watch.Added || l.Name != "n3" {
			t.Fatalf("a watch of n3 resumed at %s: %v %+v, want n3 ADDED (and nothing of n2)", rvs[1], ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a watch of n3 resumed before its creation: no event in 10 s")
	}
}

// A fleet's Lease carries the field set kube-apiserver v1.37.2 keeps for it (read back from one
// of a fleet's Leases on the local control plane), byte for byte: the measurement's Lease watch
// and each renewal's answer decode it.
func TestLeaseFieldsAreTheApiserversForAFleetsLease(t *testing.T) {
	lease := testLease("fakelet-00007")
	lease.Annotations = map[string]string{"fakelet.dev/run": "20261203-060238-195373"}
	lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "fakelet-00007", UID: "d8994ab0-1748-47da-9576-1bf2ba53d349"}}
	const apiserver = `{"f:metadata":{"f:annotations":{".":{},"f:fakelet.dev/run":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"d8994ab0-1748-47da-9576-1bf2ba53d349\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`
	if got := string(leaseFields(lease)); got != apiserver {
		t.Errorf("the stand-in keeps the field set\n%s\nfor a Lease kube-apiserver keeps\n%s\nfor", got, apiserver)
	}
	lease.Labels = map[string]string{"b": "", "a": ""}
	const labelled = `{"f:metadata":{"f:annotations":{".":{},"f:fakelet.dev/run":{}},"f:labels":{".":{},"f:a":{},"f:b":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"d8994ab0-1748-47da-9576-1bf2ba53d349\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`
	if got := string(leaseFields(lease)); got != labelled {
		t.Errorf("with labels, the field set is\n%s\nwant\n%s", got, labelled)
	}
	if got, want := string(leaseFields(testLease("n1"))), `{"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`; got != want {
		t.Errorf("a bare Lease's field set is %s, want %s", got, want)
	}
}

// BenchmarkLeaseFields is the field set the stand-in makes at every renewal of a fleet's Lease.
func BenchmarkLeaseFields(b *testing.B) {
	lease := testLease("fakelet-00007")
	lease.Annotations = map[string]string{"fakelet.dev/run": "20261203-060238-195373"}
	lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "fakelet-00007", UID: "d8994ab0-1748-47da-9576-1bf2ba53d349"}}
	b.ReportAllocs()
	for b.Loop() {
		leaseFields(lease)
	}
}

// A created object's generation is what the apiserver's strategy for its kind makes it: 1 for a
// Pod, what the client sent for a Node or a Lease (a kubelet sends none).
func TestCreateSetsTheGenerationAsTheApiserversStrategiesDo(t *testing.T) {
	_, cs := serve(t, Options{})
	ctx := context.Background()
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := cs.CoordinationV1().Leases("kube-node-lease").Create(ctx, testLease("n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Generation != 0 || lease.Generation != 0 || pod.Generation != 1 {
		t.Errorf("generations: Node %d, Lease %d, Pod %d; want 0, 0, 1", node.Generation, lease.Generation, pod.Generation)
	}
}
