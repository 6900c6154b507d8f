package agent

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// sentKind is what the authorizer sees of a request: its verb, resource and namespace's scope.
type sentKind struct {
	verb, group, resource, subresource string
	scope                              Scope
}

func (k sentKind) String() string {
	s := k.verb + " " + k.resource
	if k.subresource != "" {
		s += "/" + k.subresource
	}
	if k.group != "" {
		s += "." + k.group
	}
	return fmt.Sprintf("%s (scope %d)", s, k.scope)
}

// scopeOf reads the scope of a request sent in namespace ns, where the test's pods live in
// "fakelet", apart from the node's Events in "default".
func scopeOf(t *testing.T, ns string) Scope {
	switch ns {
	case "":
		return ScopeCluster
	case LeaseNamespace:
		return ScopeLeases
	case metav1.NamespaceDefault:
		return ScopeNodeEvents
	case "fakelet":
		return ScopePods
	}
	t.Errorf("a request in namespace %q", ns)
	return ScopeCluster
}

// watchKind reads a watch's kind from its path: /api/v1/[namespaces/NS/]RESOURCE or
// /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE.
func watchKind(t *testing.T, req WatchRequest) sentKind {
	parts := strings.Split(strings.TrimPrefix(req.Path, "/"), "/")
	k := sentKind{verb: "watch", resource: parts[len(parts)-1]}
	switch {
	case parts[0] == "api" && len(parts) > 2:
		parts = parts[2:]
	case parts[0] == "apis" && len(parts) > 3:
		k.group, parts = parts[1], parts[3:]
	default:
		t.Fatalf("watch path %s", req.Path)
	}
	ns := ""
	if len(parts) == 3 && parts[0] == "namespaces" {
		ns = parts[1]
	}
	k.scope = scopeOf(t, ns)
	if k.resource != req.Resource {
		t.Errorf("watch %s recorded as %s", req.Path, req.Resource)
	}
	return k
}

// TestRequestsAreWhatAgentsSend runs an agent of each footprint, with a pod and without, through
// every path that sends a kind of request (start, a conflict on its status patch and on its Lease,
// two NotReady flaps, and with a pod its start, a failed sync and its deletion), and compares the
// kinds its requests and watches had with Requests: none missing (the preflight of --identity fleet
// would let the run start and the apiserver refuse it), none left over (the deploy RBAC would grant
// what no agent sends).
func TestRequestsAreWhatAgentsSend(t *testing.T) {
	for _, fp := range []Footprint{FootprintHeartbeat, FootprintKubelet} {
		for _, pods := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s footprint, pods %v", fp, pods), func(t *testing.T) {
				got := sentKinds(t, fp, pods)
				want := map[sentKind]bool{}
				for _, k := range Requests(fp, pods) {
					want[sentKind{k.Verb, k.Group, k.Resource, k.Subresource, k.Scope}] = true
					if k.For == "" {
						t.Errorf("%+v says not what it is for", k)
					}
				}
				for k := range got {
					if !want[k] {
						t.Errorf("the agent sent %s, which Requests lacks", k)
					}
				}
				for k := range want {
					if !got[k] {
						t.Errorf("Requests has %s, which the agent did not send", k)
					}
				}
			})
		}
	}
}

// sentKinds returns the kinds of request one agent of footprint fp sent through the paths
// TestRequestsAreWhatAgentsSend names.
func sentKinds(t *testing.T, fp Footprint, pods bool) map[sentKind]bool {
	h := newHarness(t, func(c *Config) { c.Footprint = fp })
	w := &fakeWatcher{h: h}
	const node = "fakelet-00007"
	a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: h.client.CoordinationV1(), Storage: h.client.StorageV1(), Watches: w}, node, 7, "")
	var mu sync.Mutex // the agent's requests come from the scheduler's workers
	got := map[sentKind]bool{}
	var armed bool // the next Pending report makes the sync's GET after it fail
	h.client.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		res := action.GetResource()
		got[sentKind{action.GetVerb(), res.Group, res.Resource, action.GetSubresource(), scopeOf(t, action.GetNamespace())}] = true
		if p, ok := action.(k8stesting.PatchAction); ok && armed && res.Resource == "pods" && strings.Contains(string(p.GetPatch()), `"Pending"`) {
			armed = false
			h.failNext("get", "pods", 1, apierrors.NewServiceUnavailable("busy"))
		}
		return false, nil, nil
	})
	served := 0
	serveWatches := func() {
		w.mu.Lock()
		ws := w.ws[served:]
		served = len(w.ws)
		w.mu.Unlock()
		for _, fw := range ws {
			mu.Lock()
			got[watchKind(t, fw.req)] = true
			mu.Unlock()
			fw.h.Opened(nil)
			fw.h.Event(WatchEvent{Type: EventBookmark, ResourceVersion: "10", InitialEventsEnd: true})
		}
	}
	leases := schema.GroupResource{Group: groupCoordination, Resource: "leases"}
	nodes := schema.GroupResource{Resource: "nodes"}
	// A conflict on the first status patch makes the next try GET the Node; one on a renewal GETs
	// the Lease.
	h.failNext("patch", "nodes/status", 1, apierrors.NewConflict(nodes, node, errors.New("modified")))
	a.Start(h.ctx)
	at := 5 * time.Second
	h.advance(at)
	serveWatches()
	h.failNext("update", "leases", 1, apierrors.NewConflict(leases, node, errors.New("modified")))
	at += 20 * time.Second
	h.advance(at)
	// Two flaps: the second repeats the first's Events, which the recorder PATCHes.
	for range 2 {
		a.SetHealth(func(h *Health) { h.NotReady = true })
		at += 30 * time.Second
		h.advance(at)
		a.SetHealth(func(h *Health) { h.NotReady = false })
		at += 30 * time.Second
		h.advance(at)
	}
	if pods {
		// The fleet's pod as the apiserver admits it, with a service account token volume. Its first
		// sync fails after the Pending report, so the next one reports it again and the recorder
		// PATCHes the container's repeated Events. The test's own reads and writes of the pod go to
		// the tracker, past the reactors.
		pod := tokenPod("p1", "uid-p1", "")
		pod.Spec.ImagePullSecrets = nil
		podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
		if err := h.client.Tracker().Create(podsGVR, pod, "fakelet"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		armed = true
		mu.Unlock()
		a.ObservePod(pod)
		at += 30 * time.Second
		h.advance(at)
		serveWatches()
		got, err := h.client.Tracker().Get(podsGVR, "fakelet", "p1")
		if err != nil || !runningReady(got.(*corev1.Pod)) {
			t.Fatalf("pod %v (%v), want it Running and Ready", got, err)
		}
		// Its container crashes: the second exit's BackOff Event repeats at the third, which the
		// recorder PATCHes.
		a.SetPodFault(PodFault{Crash: true})
		at += 40 * time.Second
		h.advance(at)
		a.SetPodFault(PodFault{})
		at += 30 * time.Second
		h.advance(at)
		// The node lifecycle controller marks it not Ready: the status manager reconciles it, after a
		// GET in either footprint.
		if got, err = h.client.Tracker().Get(podsGVR, "fakelet", "p1"); err != nil {
			t.Fatal(err)
		}
		unready := got.(*corev1.Pod).DeepCopy()
		unready.ResourceVersion = "999999"
		for i := range unready.Status.Conditions {
			if unready.Status.Conditions[i].Type == corev1.PodReady {
				unready.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
		if err := h.client.Tracker().Update(podsGVR, unready, "fakelet"); err != nil {
			t.Fatal(err)
		}
		a.ObservePod(unready)
		at += 30 * time.Second
		h.advance(at)
		if got, err = h.client.Tracker().Get(podsGVR, "fakelet", "p1"); err != nil || !runningReady(got.(*corev1.Pod)) {
			t.Fatalf("pod %v (%v) after the reconcile, want it Running and Ready", got, err)
		}
		deleting := got.(*corev1.Pod).DeepCopy()
		deleting.DeletionTimestamp = &metav1.Time{Time: h.clock.Now()}
		if err := h.client.Tracker().Update(podsGVR, deleting, "fakelet"); err != nil {
			t.Fatal(err)
		}
		a.ObservePod(deleting)
		at += 30 * time.Second
		h.advance(at)
		if _, err := h.client.Tracker().Get(podsGVR, "fakelet", "p1"); !apierrors.IsNotFound(err) {
			t.Errorf("the deleted pod is still there: %v", err)
		}
	}
	serveWatches()
	a.Stop()
	mu.Lock()
	defer mu.Unlock()
	var names []string
	for k := range got {
		names = append(names, k.String())
	}
	slices.Sort(names)
	t.Logf("sent: %s", strings.Join(names, ", "))
	return maps.Clone(got)
}
