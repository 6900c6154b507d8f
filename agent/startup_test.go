package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletStartAgent is an agent of the kubelet footprint with a CSINode client and no watches.
func kubeletStartAgent(t *testing.T) (*harness, *Agent) {
	h := newHarness(t, func(c *Config) { c.Footprint = FootprintKubelet })
	a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: h.client.CoordinationV1(), Storage: h.client.StorageV1()}, "fakelet-00003", 3, "")
	return h, a
}

func TestKubeletStartup(t *testing.T) {
	h, a := kubeletStartAgent(t)
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	calls := h.take()

	// The CSI plugin: a GET of the CSINode to reach the apiserver, then GET Node (missing until the
	// registration 100 ms in, so tried again after 10, 50 and 250 ms with 10% jitter), GET CSINode,
	// POST CSINode.
	var csi []string
	var events []*corev1.Event
	for _, c := range calls {
		switch {
		case c.res == "csinodes":
			csi = append(csi, c.verb+" csinodes")
			if c.verb == "create" {
				n := c.object.(*storagev1.CSINode)
				uid, _ := a.Owned()
				if len(n.OwnerReferences) != 1 || n.OwnerReferences[0].UID != uid || n.OwnerReferences[0].Kind != "Node" {
					t.Errorf("CSINode owners %+v, want the Node %s", n.OwnerReferences, uid)
				}
				if n.Annotations[corev1.MigratedPluginsAnnotationKey] != migratedPlugins {
					t.Errorf("CSINode annotations %v", n.Annotations)
				}
			}
		case c.res == "events" && c.verb == "create":
			events = append(events, c.object.(*corev1.Event))
		}
	}
	if got, want := strings.Join(csi, ", "), "get csinodes, get csinodes, create csinodes"; got != want {
		t.Errorf("CSINode requests: %s, want %s\nall: %v", got, want, calls)
	}
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
		if e.Namespace != "default" || e.Source.Component != "kubelet" || e.Source.Host != "fakelet-00003" ||
			e.InvolvedObject.Kind != "Node" || e.InvolvedObject.Name != "fakelet-00003" || e.Count != 1 {
			t.Errorf("event %s: %+v", e.Reason, e)
		}
	}
	if got, want := strings.Join(reasons, ", "), "Starting, NodeHasSufficientMemory, NodeHasNoDiskPressure, NodeHasSufficientPID, NodeAllocatableEnforced, NodeReady"; got != want {
		t.Errorf("events: %s\nwant    %s", got, want)
	}
	if events[0].Message != "Starting kubelet." || events[1].Message != "Node fakelet-00003 status is now: NodeHasSufficientMemory" {
		t.Errorf("messages %q, %q", events[0].Message, events[1].Message)
	}

	// NotReady and back, twice: the events before registration refer to the Node without its UID, as
	// the kubelet's nodeRefWithUID does, so the first flap creates both; the second repeats them
	// exactly, and the correlator PATCHes their counts.
	for i := 0; i < 2; i++ {
		a.SetHealth(func(h *Health) { h.NotReady = true })
		h.advance(time.Duration(60*i+35) * time.Second)
		a.SetHealth(func(h *Health) { h.NotReady = false })
		h.advance(time.Duration(60*i+65) * time.Second)
	}
	var got []string
	for _, c := range h.take() {
		if c.res == "events" {
			got = append(got, c.verb)
			if c.verb == "patch" && !strings.Contains(string(c.patch), `"count":2`) {
				t.Errorf("repeat patch %s, want count 2", c.patch)
			}
		}
	}
	if strings.Join(got, " ") != "create create patch patch" {
		t.Errorf("events after two flaps: %v, want NodeNotReady and NodeReady created, then both patched", got)
	}
}

func TestHeartbeatFootprintSendsNoKubeletExtras(t *testing.T) {
	h := newHarness(t)
	a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: h.client.CoordinationV1(), Storage: h.client.StorageV1()}, "fakelet-00004", 4, "")
	a.Start(h.ctx)
	h.advance(time.Minute)
	for _, c := range h.take() {
		if c.res == "events" || c.res == "csinodes" {
			t.Errorf("heartbeat footprint sent %v", c)
		}
	}
}

func TestEventSpamFilter(t *testing.T) {
	h, a := kubeletStartAgent(t)
	a.Start(h.ctx)
	h.advance(time.Second)
	h.take()
	r := a.run
	// The budget is per object, UID included: the events before registration had none. 25 pass, then
	// one per 5 minutes.
	for i := 0; i < 30; i++ {
		r.events.nodeEvent("Test", "spam "+string(rune('a'+i)))
	}
	h.advance(2 * time.Second)
	n := 0
	for _, c := range h.take() {
		if c.res == "events" {
			n++
		}
	}
	if n != 25 {
		t.Errorf("sent %d of 30 events, want the node's budget of 25", n)
	}
	h.advance(5*time.Minute + 2*time.Second)
	r.events.nodeEvent("Test", "later")
	h.advance(5*time.Minute + 3*time.Second)
	if n := len(h.take()); n == 0 {
		t.Error("no event passed 5 minutes later")
	}
}

// A pod no kubelet has started: the status manager GETs it and patches it Pending, then its sandbox
// ready, the container's events follow, then a GET and the patch to Running and Ready.
func TestKubeletPodSequence(t *testing.T) {
	h, a := kubeletStartAgent(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fakelet-00003-0", Namespace: "fakelet", UID: "pod-uid"},
		Spec: corev1.PodSpec{NodeName: "fakelet-00003", Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}}}
	created, err := h.client.CoreV1().Pods("fakelet").Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Start(h.ctx)
	h.advance(5 * time.Second)
	h.take()
	a.ObservePod(created)
	h.advance(10 * time.Second)
	// The events are written by the recorder's own task, as the kubelet's broadcaster writes them
	// from a goroutine of its own: they interleave with the pod's requests in any order.
	var got, events []string
	for _, c := range h.take() {
		switch c.res {
		case "pods", "pods/status":
			got = append(got, c.verb+" "+c.res)
		case "events":
			e := c.object.(*corev1.Event)
			events = append(events, c.verb+" "+e.Reason)
			if e.Namespace != "fakelet" || e.InvolvedObject.FieldPath != "spec.containers{pause}" || e.InvolvedObject.UID != "pod-uid" {
				t.Errorf("event %s: %+v", e.Reason, e)
			}
		}
	}
	if want := "get pods; patch pods/status; get pods; patch pods/status; get pods; patch pods/status"; strings.Join(got, "; ") != want {
		t.Errorf("pod requests:\n got %s\nwant %s", strings.Join(got, "; "), want)
	}
	if want := "create Pulled; create Created; create Started"; strings.Join(events, "; ") != want {
		t.Errorf("events:\n got %s\nwant %s", strings.Join(events, "; "), want)
	}
	if known, ready := a.Pods(); known != 1 || ready != 1 {
		t.Errorf("pods known %d ready %d, want 1 and 1", known, ready)
	}

	// Deleted: a sync reports the container stopping, the next the pod Succeeded, the last deletes
	// it, each after a GET: with the two at start, the 5 GETs, 4 PATCHes and a DELETE a hollow
	// kubelet sends per pod in the kubemark reference's audit log.
	running, err := h.client.CoreV1().Pods("fakelet").Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleting := running.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: h.clock.Now()}
	if _, err := h.client.CoreV1().Pods("fakelet").Update(context.Background(), deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.take()
	a.ObservePod(deleting)
	h.advance(20 * time.Second)
	got = nil
	for _, c := range h.take() {
		if c.res == "pods" || c.res == "pods/status" {
			got = append(got, c.verb+" "+c.res)
		}
	}
	if want := "get pods; patch pods/status; get pods; patch pods/status; get pods; delete pods"; strings.Join(got, "; ") != want {
		t.Errorf("deletion:\n got %s\nwant %s", strings.Join(got, "; "), want)
	}
}

// A kubelet's first status update after it created its Node reads the Node from its lister, which
// has not seen it yet, and its retry GETs it before the patch; the heartbeat footprint patches from
// the POST's answer.
func TestFirstStatusUpdateGetsTheNodeItCreated(t *testing.T) {
	for _, tc := range []struct {
		footprint Footprint
		want      string
	}{
		{FootprintKubelet, "create nodes, get nodes, patch nodes/status"},
		{FootprintHeartbeat, "create nodes, patch nodes/status"},
	} {
		h := newHarness(t, func(c *Config) { c.Footprint = tc.footprint })
		a := New(h.cfg, Clients{Core: h.client.CoreV1(), Coordination: h.client.CoordinationV1()}, "fakelet-00005", 5, "")
		a.Start(h.ctx)
		h.advance(5 * time.Second)
		var got []string
		for _, c := range h.take() {
			if strings.HasPrefix(c.res, "nodes") {
				got = append(got, c.verb+" "+c.res)
			}
		}
		// The Lease's first sync GETs the Node for its owner too, before and after.
		if s := strings.Join(got, ", "); !strings.Contains(s, tc.want) {
			t.Errorf("%s footprint: node requests %s, want %s among them", tc.footprint, s, tc.want)
		}
	}
}
