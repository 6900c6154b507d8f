package agent

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"fakelet.dev/fakelet/fleetname"
	"fakelet.dev/fakelet/internal/scheduler"
)

func keptAgent(tb testing.TB, images int, name string, index int) *Agent {
	tb.Helper()
	tmpl, err := NewTemplate(TemplateOptions{Fleet: "kept", RunID: "run-1", Images: images})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := &Config{Template: tmpl, Heartbeat: kubeletHeartbeat(tb), Footprint: FootprintHeartbeat, Scheduler: scheduler.New(testingclock.NewFakeClock(t0))}
	return New(cfg, Clients{}, name, index, "zone-a")
}

// serverNode is the Node a's registration leaves on a cluster whose controllers have been at it:
// the apiserver's metadata, the TTL controller's annotation, a pod range, a taint and conditions
// the node lifecycle controller changed; decoded anew from protobuf, as an answer or an event is.
func serverNodeOf(tb testing.TB, a *Agent) *corev1.Node {
	tb.Helper()
	now := metav1.NewTime(t0)
	n := a.cfg.Template.initialNode(a, now, a.health.conditions(nil, now))
	n.UID, n.ResourceVersion, n.CreationTimestamp = "0b7c1a3e-4f5d-4c0e-9d8e-2a1b3c4d5e6f", "4711", now
	n.Annotations["node.alpha.kubernetes.io/ttl"] = "0"
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.3.0/24", []string{"10.244.3.0/24"}
	n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now}}
	later := metav1.NewTime(t0.Add(50 * time.Second))
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", later
	}
	b, err := n.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	var decoded corev1.Node
	if err := decoded.Unmarshal(b); err != nil {
		tb.Fatal(err)
	}
	return a.cfg.Template.Compact(&decoded)
}

// A Node of the template's shape is kept as what is its own, and rebuilt to the same Node: the same
// JSON the status patch is computed from, the same protobuf.
func TestAKeptNodeIsRebuiltAsItWas(t *testing.T) {
	for _, images := range []int{0, MaxImages} {
		a := keptAgent(t, images, "fakelet-00003", 3)
		n := serverNodeOf(t, a)
		k := a.keep(n)
		if k.whole != nil {
			t.Fatalf("images %d: the template's Node was kept whole", images)
		}
		got := a.node(k)
		if !equality.Semantic.DeepEqual(got, n) {
			t.Fatalf("images %d: rebuilt\n%+v\nwant\n%+v", images, got, n)
		}
		for what, enc := range map[string]func(*corev1.Node) ([]byte, error){
			"JSON":     func(n *corev1.Node) ([]byte, error) { return json.Marshal(n) },
			"protobuf": func(n *corev1.Node) ([]byte, error) { return n.Marshal() },
		} {
			want, err1 := enc(n)
			have, err2 := enc(got)
			if err1 != nil || err2 != nil || !bytes.Equal(have, want) {
				t.Errorf("images %d: the rebuilt Node's %s differs:\n%s\nwant\n%s", images, what, have, want)
			}
		}
	}
}

// A Node that differs from the template's shape in anything keep does not keep is kept whole, and
// given back as it is: never rebuilt without what makes it differ.
func TestANodeNotOfTheTemplatesShapeIsKeptWhole(t *testing.T) {
	a := keptAgent(t, MaxImages, "fakelet-00003", 3)
	for what, change := range map[string]func(n *corev1.Node){
		"a label of someone else's": func(n *corev1.Node) { n.Labels["team"] = "infra" },
		"no fleet label":            func(n *corev1.Node) { delete(n.Labels, fleetname.Label) },
		"a finalizer":               func(n *corev1.Node) { n.Finalizers = []string{"example.com/keep"} },
		"another provider ID":       func(n *corev1.Node) { n.Spec.ProviderID = "aws:///i-0" },
		"volumes in use":            func(n *corev1.Node) { n.Status.VolumesInUse = []corev1.UniqueVolumeName{"kubernetes.io/csi/x"} },
		"a config source":           func(n *corev1.Node) { n.Spec.ConfigSource = &corev1.NodeConfigSource{} },
		"another boot ID":           func(n *corev1.Node) { n.Status.NodeInfo.BootID = "rebooted" },
		"another address": func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}}
		},
		"capacity of its own": func(n *corev1.Node) {
			n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		},
		"a time within a second":       func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime.Time = t0.Add(time.Millisecond) },
		"another name":                 func(n *corev1.Node) { n.Name = "fakelet-00004" },
		"another daemon endpoint":      func(n *corev1.Node) { n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10251 },
		"no images":                    func(n *corev1.Node) { n.Status.Images = nil },
		"swap reported by the kubelet": func(n *corev1.Node) { n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{} },
	} {
		n := serverNodeOf(t, a)
		change(n)
		k := a.keep(n)
		if k.whole != n || a.node(k) != n {
			t.Errorf("a Node with %s was not kept whole", what)
		}
	}
}

// Nodes of the same conditions and annotations share one copy of their texts and of the map.
func TestKeptNodesShareTheirTextsAndAnnotations(t *testing.T) {
	a := keptAgent(t, 0, "fakelet-00003", 3)
	b := New(a.cfg, Clients{}, "fakelet-00004", 4, "zone-a")
	ka, kb := a.keep(serverNodeOf(t, a)), b.keep(serverNodeOf(t, b))
	if ka.whole != nil || kb.whole != nil {
		t.Fatal("the template's Nodes were kept whole")
	}
	if !sameMap(ka.annotations, kb.annotations) {
		t.Error("two Nodes of the same annotations keep a map each")
	}
	for i := range ka.conds {
		if ka.conds[i].text != kb.conds[i].text {
			t.Errorf("condition %d: two Nodes of the same texts keep a copy each", i)
		}
	}
}

// BenchmarkKeepNode is what an agent keeps of its Node: every byte keep allocates is kept (B/op).
func BenchmarkKeepNode(b *testing.B) {
	a := keptAgent(b, 0, "fakelet-00003", 3)
	n := serverNodeOf(b, a)
	b.ReportAllocs()
	for b.Loop() {
		if k := a.keep(n); k.whole != nil {
			b.Fatal("kept whole")
		}
	}
}
